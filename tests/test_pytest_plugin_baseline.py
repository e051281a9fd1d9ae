"""``--aeval-baseline REF``: the suite's evaluations compared with a baseline run."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from aeval import EvaluationSample, JsonlSink, evaluate_sync
from aeval.strategies import ExactMatchStrategy

pytest_plugins = ("pytester",)

INI = (
    "[pytest]\n"
    "addopts = --strict-markers -p no:cacheprovider -p no:benchmark -p no:hypothesispytest\n"
)

SAMPLES = [
    EvaluationSample(f"s{i}", [f"w{i}"], f"W{i}", tags=["a"] if i < 15 else ["b"])
    for i in range(30)
]

INNER = """
from aeval import EvaluationSample, JsonlSink, evaluate_sync
from aeval.strategies import ExactMatchStrategy

SAMPLES = [
    EvaluationSample(f"s{{i}}", [f"w{{i}}"], f"W{{i}}", tags=["a"] if i < 15 else ["b"])
    for i in range(30)
]
BROKEN = {broken}


def bot(params):
    text = params[0]
    return "?" if int(text[1:]) < BROKEN else text.upper()


def test_first_half(record_evaluation):
    record_evaluation(evaluate_sync(SAMPLES[:15], bot, ExactMatchStrategy()))


def test_second_half(record_evaluation):
    record_evaluation(evaluate_sync(SAMPLES[15:], bot, ExactMatchStrategy()))
"""


def upper(params: object) -> str:
    return str(params[0]).upper()  # type: ignore[index]


@pytest.fixture
def baseline(pytester: pytest.Pytester) -> Path:
    """``main/rows.jsonl``: every sample passes."""
    pytester.makeini(INI)
    report = evaluate_sync(SAMPLES, upper, ExactMatchStrategy())
    path = pytester.path / "main" / "rows.jsonl"
    path.parent.mkdir()
    sink = JsonlSink(path)

    async def write() -> None:
        for row in report.evaluations:
            await sink.send(row)
        await sink.flush()

    anyio.run(write)
    return path


def test_a_significant_regression_fails_a_session_whose_tests_passed(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    pytester.makepyfile(test_inner=INNER.format(broken=12))
    result = pytester.runpytest("--aeval-baseline", "main/rows.jsonl")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "=* aeval evaluations =*",
            f"Compared with the baseline {baseline}: 100.00% → 60.00%: -40.00 points (95% CI "
            "-57.83 to -22.17), p < 0.001 (exact McNemar test): worse",
            "  with 30 samples only a change of 32 points or more can be told from noise; "
            "12 regressions, 0 fixes; 0 pairs only in the baseline, 0 only in this session",
            "  regressions:",
            "    - s0 [[]ExactMatchStrategy]: passed → failed",
            "    ... and 2 more",
            "FAILED: significant regression on overall: 100.00% → 60.00%, -40.00 points *; "
            "tag a: 100.00% → 20.00%, -80.00 points *",
        ]
    )


def test_no_regression_passes_and_says_so(pytester: pytest.Pytester, baseline: Path) -> None:
    pytester.makepyfile(test_inner=INNER.format(broken=1))
    result = pytester.runpytest("--aeval-baseline", str(baseline))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "Compared with the baseline *: 100.00% → 96.67%: -3.33 points *: no significant "
            "difference",
            "No significant regression compared with the baseline *",
        ]
    )


def test_the_margin_lets_a_small_significant_drop_pass(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    pytester.makepyfile(test_inner=INNER.format(broken=12))
    result = pytester.runpytest("--aeval-baseline", "main/rows.jsonl", "--aeval-margin", "85")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["No significant regression beyond 85.00 points compared with the baseline *"]
    )


def test_xdist_workers_send_their_rows_to_the_comparison(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    pytester.makepyfile(test_inner=INNER.format(broken=12))
    result = pytester.runpytest_subprocess("-n", "2", "--aeval-baseline", "main/rows.jsonl")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "Compared with the baseline *: 100.00% → 60.00%: -40.00 points *: worse",
            "FAILED: significant regression on overall: *",
        ]
    )


def test_a_bad_baseline_is_a_usage_error_before_any_test_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_inner=INNER.format(broken=0))
    result = pytester.runpytest("--aeval-baseline", "latest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--aeval-baseline: the baseline 'latest' is not a file, and there is no run store "
            f"at {pytester.path / '.aeval' / 'runs.sqlite'} to look it up in: *--aeval-store*"
        ]
    )
    margin = pytester.runpytest("--aeval-baseline", "x.jsonl", "--aeval-margin", "-2")
    assert margin.ret == pytest.ExitCode.USAGE_ERROR
    margin.stderr.fnmatch_lines(["*--aeval-margin is a number of percentage points from 0 to 100*"])


def test_a_report_without_every_row_cannot_be_compared(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    pytester.makepyfile(
        test_inner="""
import anyio
import pytest
from aeval import EvaluationSample
from aeval.strategies import ExactMatchStrategy

SAMPLES = [EvaluationSample(f"s{i}", [f"w{i}"], f"W{i % 2}") for i in range(30)]


@pytest.mark.anyio
@pytest.mark.scorer(keep="failures")
async def test_bot(scorer):
    await scorer.evaluate(SAMPLES, lambda params: params[0].upper(), ExactMatchStrategy())


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""
    )
    result = pytester.runpytest("--aeval-baseline", "main/rows.jsonl")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "FAILED: --aeval-baseline */main/rows.jsonl: some evaluations cannot be compared:",
            "    - test_inner.py::test_bot: its report holds 28 of its 30 rows (keep='failures' "
            "or 'none'); give its Scorer keep='all' to compare it",
        ]
    )
