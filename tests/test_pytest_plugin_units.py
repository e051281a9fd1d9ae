"""The plugin's parts: the suite report's details, file names, path lookup (in a pytester
session), and eval_assert called directly."""

from __future__ import annotations

import threading

import anyio
import orjson
import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationSample,
    Outcome,
)
from aeval.pytest_plugin import EvalAssert
from aeval.strategies import ContainsStrategy, ExactMatchStrategy, inline

CASE = EvaluationSample("capital", ["France?"], "Paris", tags=["geo"], metadata={"lang": "en"})


pytest_plugins = ("pytester",)

# The inner sessions leave out plugins of this machine that slow every session down (and
# pytest-benchmark, which warns, an error here, when the outer session runs under xdist).
INI = (
    "[pytest]\n"
    "addopts = --strict-markers -p no:cacheprovider -p no:benchmark -p no:hypothesispytest\n"
)

INNER = """
import pytest
from aeval import EvaluationSample, evaluate_sync
from aeval.pytest_plugin import eval_cases
from aeval.strategies import ExactMatchStrategy

NINE = [EvaluationSample(f"p{i}", ["a"], "A") for i in range(9)]


def upper(params):
    return params[0].upper()


def boom(params):
    raise ValueError("boom")


@pytest.mark.parametrize("case", ["x|y", "a" * 300, "a" * 299 + "b"])
def test_many(record_evaluation, case):
    record_evaluation(evaluate_sync(NINE, upper, ExactMatchStrategy()))


def test_one(record_evaluation):
    sample = EvaluationSample("c", ["q"], "a")
    record_evaluation(evaluate_sync([sample], boom, ExactMatchStrategy()), label="one two")


@eval_cases("local.yaml")
def test_local(case):
    assert case.name == "here"


@eval_cases("top.yaml")
def test_top(case):
    assert case.name == "root"
"""


def test_the_suite_report_weighs_escapes_names_files_and_finds_samples(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    tests = pytester.path / "tests"
    tests.mkdir()
    (pytester.path / "top.yaml").write_text("- {name: root, parameters: [q]}\n")
    (tests / "top.yaml").write_text("- {name: nested, parameters: [q]}\n")
    (tests / "local.yaml").write_text("- {name: here, parameters: [q]}\n")
    (tests / "test_inner.py").write_text(INNER)
    result = pytester.runpytest("--aeval-report-dir", "out")
    result.assert_outcomes(passed=6)
    out = pytester.path / "out"
    suite = orjson.loads((out / "evaluation-suite-report.json").read_bytes())["summary"]
    # 27 of 28 rows passed; the unweighted mean of 100, 100, 100 and 0 % would say 75 %
    assert suite["averageScore"] == round(2700 / 28, 2)
    markdown = (out / "evaluation-suite-report.md").read_text()
    assert "| tests/test_inner.py::test_many[x\\|y] | 9 | 9 | 0 | 100.00% |" in markdown
    result.stdout.fnmatch_lines(
        [
            "tests/test_inner.py::test_one (one two) [[]PASSED]: Score 0.00% (0/1 passed) - "
            "1 evaluation(s) failed",
            "    - c [[]ExactMatchStrategy]: 0.00% - Failed to execute sample 'c': ValueError: "
            "boom; the strategy ExactMatchStrategy could not run",
        ]
    )
    stems = sorted(path.stem for path in out.glob("tests_test_inner.py_*.md"))
    assert "tests_test_inner.py_test_many_x_y" in stems
    assert "tests_test_inner.py_test_one-one_two" in stems
    long = [stem for stem in stems if stem.startswith("tests_test_inner.py_test_many_aaa")]
    assert len(long) == 2 and all(len(stem) == 120 for stem in long)


def test_a_missing_sample_file_names_both_places_looked(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "test_inner.py").write_text(
        "from aeval.pytest_plugin import eval_cases\n\n\n"
        "@eval_cases('data/none.yaml')\ndef test_none(case):\n    pass\n"
    )
    result = pytester.runpytest()
    root, here = pytester.path, tests
    result.stdout.fnmatch_lines(
        [
            f"*data/none.yaml: File not found; looked in: {root / 'data/none.yaml'}, "
            f"{here / 'data/none.yaml'}*"
        ]
    )


# -- eval_assert --------------------------------------------------------------------------------


def test_passes_fails_and_with_threshold() -> None:
    checker = EvalAssert(CASE)
    exact = checker.assert_eval("Paris", ExactMatchStrategy(), ContainsStrategy(["Par", "xx"]))
    assert [r.score for r in exact.results()] == [1.0, 0.5]
    with pytest.raises(AssertionError) as caught:
        exact.passes()
    assert str(caught.value) == (
        "Case 'capital': 1 of 2 strategies scored below the threshold 0.70:\n"
        "  - ContainsStrategy: score 0.50 (Missing 1 of 2 required texts: 'xx')"
    )
    assert exact.with_threshold(0.5).passes() is not exact
    assert exact.threshold == 0.7
    with pytest.raises(AssertionError) as caught:
        exact.with_threshold(1.0).fails()
    assert str(caught.value) == (
        "Case 'capital': expected every score below the threshold 1.00, but 1 of 2 "
        "strategies reached it:\n  - ExactMatchStrategy: score 1.00 (Output equals the "
        "expected output)"
    )
    wrong = checker.assert_eval("Rome", ExactMatchStrategy())
    assert wrong.fails().scores[0].score == 0.0
    with pytest.raises(ValueError, match=r"threshold must be a number between 0.0 and 1.0"):
        exact.with_threshold(70)


def test_report_rows_pass_by_threshold() -> None:
    reports: list[EvaluationReport] = []
    checker = EvalAssert(CASE, threshold=0.5, on_report=reports.append)
    checker.assert_eval("Paris", ContainsStrategy(["Par", "xx"]))
    checker.assert_eval("Rome", ExactMatchStrategy())
    assert len(reports) == 2
    final = reports[-1]
    assert [(r.strategy, r.outcome, r.score) for r in final.evaluations] == [
        ("ContainsStrategy", Outcome.PASSED, 0.5),
        ("ExactMatchStrategy", Outcome.FAILED, 0.0),
    ]
    assert final.tag_scores == {"geo": 50.0}
    assert checker.report().evaluation_count == 2


def test_metadata_stays_for_later_calls() -> None:
    seen: list[dict[str, object]] = []

    def spy(sample: EvaluationSample, output: object) -> EvaluationResult:
        seen.append(dict(sample.metadata))
        return EvaluationResult.passing()

    checker = EvalAssert(CASE)
    checker.assert_eval("x", spy)
    checker.assert_eval("x", spy, metadata={"user": "ann"})
    checker.assert_eval("x", spy, metadata={"turn": 2})
    checker.assert_eval("x", spy)
    assert seen == [
        {"lang": "en"},
        {"lang": "en", "user": "ann"},
        {"lang": "en", "user": "ann", "turn": 2},
        {"lang": "en", "user": "ann", "turn": 2},
    ]
    assert checker.metadata == {"user": "ann", "turn": 2}


class AsyncJudge:
    name = "judge"

    async def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.passing(0.9, "fine")


def test_async_strategy_from_sync_code_runs_a_loop() -> None:
    checked = EvalAssert(CASE).assert_eval("Paris", AsyncJudge(), ExactMatchStrategy())
    assert [s.score for s in checked.passes().scores] == [0.9, 1.0]


@pytest.mark.anyio
async def test_async_strategy_inside_a_loop_needs_assert_eval_async() -> None:
    checker = EvalAssert(CASE)
    with pytest.raises(RuntimeError) as caught:
        checker.assert_eval("Paris", AsyncJudge())
    assert str(caught.value) == (
        "Case 'capital': an async strategy cannot run inside a running event loop from "
        "assert_eval(); use `await eval_assert.assert_eval_async(...)`"
    )
    checked = await checker.assert_eval_async("Paris", AsyncJudge(), ExactMatchStrategy())
    assert [r.explanation for r in checked.passes().results()] == [
        "fine",
        "Output equals the expected output",
    ]
    sync_only = checker.assert_eval("Paris", ExactMatchStrategy())
    assert sync_only.passes().scores[0].score == 1.0


@pytest.mark.anyio
async def test_assert_eval_async_runs_plain_strategies_in_a_thread_inline_ones_on_the_loop() -> (
    None
):
    """A plain strategy may block (a moderation API over HTTP): it waits here for an event
    the event loop sets, which only works when it runs in a worker thread, as a Scorer runs
    it. An ``@inline`` one and the built-in checks run on the loop's own thread."""
    loop_thread = threading.get_ident()
    released = threading.Event()
    threads: dict[str, int] = {}

    def blocking(sample: EvaluationSample, output: object) -> EvaluationResult:
        threads["blocking"] = threading.get_ident()
        assert released.wait(10), "the event loop was blocked"
        return EvaluationResult.passing(1.0, "moderated")

    @inline
    def quick(sample: EvaluationSample, output: object) -> EvaluationResult:
        threads["quick"] = threading.get_ident()
        return EvaluationResult.passing(1.0, "quick")

    async def release() -> None:
        released.set()

    async with anyio.create_task_group() as group:
        group.start_soon(release)
        checked = await EvalAssert(CASE).assert_eval_async(
            "Paris", blocking, quick, ExactMatchStrategy()
        )

    assert [s.score for s in checked.passes().scores] == [1.0, 1.0, 1.0]
    assert threads["blocking"] != loop_thread
    assert threads["quick"] == loop_thread


def test_strategy_errors_are_listed_and_never_pass_fails() -> None:
    def broken(sample: EvaluationSample, output: object) -> EvaluationResult:
        raise ValueError("no model")

    def sloppy(sample: EvaluationSample, output: object) -> object:
        return 1

    def undecided(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.unscored("judge reply unreadable")

    checked = EvalAssert(CASE).assert_eval("Rome", broken, sloppy, undecided)
    with pytest.raises(AssertionError) as caught:
        checked.passes()
    assert str(caught.value) == (
        "Case 'capital': 3 of 3 strategies scored below the threshold 0.70:\n"
        "  - broken: error ValueError: no model\n"
        "  - sloppy: error TypeError: strategy sloppy returned int, expected an "
        "EvaluationResult\n"
        "  - undecided: unscored (judge reply unreadable)"
    )
    with pytest.raises(AssertionError, match=r"fails\(\) needs a score from every strategy, but 3"):
        checked.fails()
    assert [r.explanation for r in checked.results()] == [
        "ValueError: no model",
        "TypeError: strategy sloppy returned int, expected an EvaluationResult",
        "judge reply unreadable",
    ]


def test_assert_eval_argument_errors() -> None:
    with pytest.raises(ValueError, match="assert_eval needs at least one strategy"):
        EvalAssert(CASE).assert_eval("x")
    with pytest.raises(ValueError, match=r"threshold must be a number between 0\.0 and 1\.0"):
        EvalAssert(CASE, threshold=1.5)
    assert repr(EvalAssert(CASE)) == "<EvalAssert case='capital' threshold=0.70>"
