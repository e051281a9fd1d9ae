"""The plugin's parts called directly: suite report, eval_assert, file names, path lookup."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import anyio
import orjson
import pytest

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    SampleFileNotFoundError,
)
from aeval._pytest_plugin._cases import EvalAssert
from aeval._pytest_plugin._config import resolve_source
from aeval._pytest_plugin._recording import report_file_stem
from aeval._pytest_plugin._suite import SuiteEntry, SuiteFailure, SuiteReport
from aeval.strategies import ContainsStrategy, ExactMatchStrategy, inline

GENERATED = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
CASE = EvaluationSample("capital", ["France?"], "Paris", tags=["geo"], metadata={"lang": "en"})


def row(name: str, outcome: Outcome, *, tags: tuple[str, ...] = ()) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], "a", tags=tags)
    score = 1.0 if outcome is Outcome.PASSED else 0.0
    return EvaluationRow(sample, "S", "out", outcome, score, f"why {name}")


# -- the suite report ---------------------------------------------------------------------------


def test_suite_average_weighs_each_report_by_its_rows() -> None:
    big = EvaluationReport([row(f"p{i}", Outcome.PASSED) for i in range(9)])
    small = EvaluationReport([row("f", Outcome.FAILED)])
    suite = SuiteReport(
        [SuiteEntry.from_report("t::big", big), SuiteEntry.from_report("t::small", small)]
    )
    # 9 of 10 rows passed; the unweighted mean of 100 % and 0 % would say 50 %
    assert suite.average_score == 90.0
    assert (suite.total_reports, suite.total_evaluations) == (2, 10)
    assert (suite.total_passed, suite.total_failed) == (9, 1)
    assert SuiteReport().average_score == 0.0


def test_entry_summarises_a_report() -> None:
    report = EvaluationReport(
        [
            row("a", Outcome.PASSED, tags=("x",)),
            row("b", Outcome.FAILED, tags=("x", "y")),
            EvaluationRow.from_error(
                EvaluationSample("c", ["q"], "a"), None, None, ErrorInfo("ValueError", "boom")
            ),
        ]
    )
    entry = SuiteEntry.from_report("t.py::test", report, label="lbl", outcome="failed")
    assert entry.failures == (
        SuiteFailure("b", "S", 0.0, "why b"),
        SuiteFailure("c", None, 0.0, "Failed to execute sample 'c': ValueError: boom"),
    )
    assert entry.describe() == (
        "t.py::test (lbl) [FAILED]: Score 33.33% (1/3 passed) - 2 evaluation(s) failed "
        "[Tags: x: 50.00%, y: 0.00%]"
    )
    assert [f.describe() for f in entry.failures] == [
        "b [S]: 0.00% - why b",
        "c: 0.00% - Failed to execute sample 'c': ValueError: boom",
    ]
    assert SuiteFailure("d", "J", None, None).describe() == "d [J]: unscored"
    assert SuiteEntry.from_dict(entry.to_dict()) == entry
    assert orjson.loads(orjson.dumps(entry.to_dict())) == entry.to_dict()
    assert SuiteEntry.from_report("t", report, max_failures=1).failures == entry.failures[:1]


def test_suite_markdown_and_json_layouts() -> None:
    entries = [
        SuiteEntry("a.py::t[x|y]", None, 75.0, 4, 3, 1, 0, {"k": 2 / 3 * 100}, (), "passed"),
        SuiteEntry("a.py::u", "two", 100.0, 1, 1, 0, 0),
    ]
    suite = SuiteReport(entries)
    assert suite.render_markdown(generated=GENERATED) == (
        "# Evaluation Suite Report\n\n**Generated**: 2025-03-04T05:06:07Z\n\n## Summary\n\n"
        "- **Total Reports**: 2\n- **Total Evaluations**: 5\n- **Passed**: 4\n"
        "- **Failed**: 1\n- **Average Score**: 80.00%\n\n## Individual Reports\n\n"
        "| Test | Evaluations | Passed | Failed | Score |\n"
        "|------|-------------|--------|--------|-------|\n"
        "| a.py::t[x\\|y] | 4 | 3 | 1 | 75.00% |\n"
        "| a.py::u (two) | 1 | 1 | 0 | 100.00% |\n"
    )
    text = suite.render_json(generated=GENERATED)
    assert text.endswith("}\n")
    assert orjson.loads(text) == {
        "timestamp": "2025-03-04T05:06:07Z",
        "summary": {
            "totalReports": 2,
            "totalEvaluations": 5,
            "totalPassed": 4,
            "totalFailed": 1,
            "averageScore": 80.0,
            "partial": False,
            "partialReason": None,
        },
        "reports": [
            {
                "test": "a.py::t[x|y]",
                "label": None,
                "evaluations": 4,
                "passed": 3,
                "failed": 1,
                "errors": 0,
                "score": 75.0,
                "tagScores": {"k": 66.67},
                "outcome": "passed",
            },
            {
                "test": "a.py::u",
                "label": "two",
                "evaluations": 1,
                "passed": 1,
                "failed": 0,
                "errors": 0,
                "score": 100.0,
                "tagScores": {},
                "outcome": None,
            },
        ],
    }


def test_suite_write(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "dir"
    assert SuiteReport().write(target) == []
    assert not target.exists()
    suite = SuiteReport([SuiteEntry("a::b", score=50.0, evaluations=2, passed=1, failed=1)])
    paths = suite.write(target, generated=GENERATED)
    assert paths == [
        target / "evaluation-suite-report.md",
        target / "evaluation-suite-report.json",
    ]
    assert paths[0].read_text() == suite.render_markdown(generated=GENERATED)
    assert paths[1].read_text() == suite.render_json(generated=GENERATED)


# -- file names and sample paths ----------------------------------------------------------------


def test_report_file_stem() -> None:
    assert report_file_stem("tests/test_bot.py::test_faq[exact]") == (
        "tests_test_bot.py_test_faq_exact"
    )
    assert report_file_stem("t.py::test[Opening hours]", "#2") == "t.py_test_Opening_hours-2"
    assert report_file_stem("::") == "report"
    assert report_file_stem("t.py::u", "one two") == "t.py_u-one_two"
    first = report_file_stem("t.py::test[" + "a" * 300 + "]")
    second = report_file_stem("t.py::test[" + "a" * 299 + "b]")
    assert len(first) == len(second) == 120
    assert first != second
    assert first.startswith("t.py_test_aaa")


def test_resolve_source(tmp_path: Path) -> None:
    root, tests = tmp_path, tmp_path / "tests"
    tests.mkdir()
    (root / "top.yaml").write_text("[]")
    (tests / "local.yaml").write_text("[]")
    (tests / "top.yaml").write_text("[]")
    assert resolve_source("top.yaml", rootdir=root, test_dir=tests) == root / "top.yaml"
    assert resolve_source("local.yaml", rootdir=root, test_dir=tests) == tests / "local.yaml"
    absolute = tests / "local.yaml"
    assert resolve_source(absolute, rootdir=root, test_dir=root) == absolute
    url = "https://example.test/samples.yaml"
    assert resolve_source(url, rootdir=root, test_dir=tests) == url
    with pytest.raises(SampleFileNotFoundError) as caught:
        resolve_source("data/none.yaml", rootdir=root, test_dir=tests)
    assert str(caught.value) == (
        f"data/none.yaml: File not found; looked in: {root / 'data/none.yaml'}, "
        f"{tests / 'data/none.yaml'}"
    )
    assert caught.value.filename == "data/none.yaml"


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
