"""The plugin's session-wide output: terminal summary, report directory, min score, xdist."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

# The inner sessions leave out plugins of this machine that slow every session down.
INI = (
    "[pytest]\n"
    "addopts = --strict-markers -p no:cacheprovider -p no:benchmark -p no:hypothesispytest\n"
)

CONFTEST = """
import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""

EVALUATIONS = """
import pytest
from aeval import EvaluationSample, evaluate_sync
from aeval.strategies import ExactMatchStrategy

HALF = [
    EvaluationSample("good", ["a"], "A", tags=["t"]),
    EvaluationSample("bad", ["b"], "nope", tags=["t", "u"]),
]
ALL = [EvaluationSample(f"s{i}", ["x"], "X") for i in range(4)]


def upper(params):
    return params[0].upper()


@pytest.mark.anyio
async def test_half(scorer):
    await scorer.evaluate(HALF, upper, ExactMatchStrategy())


def test_full(record_evaluation):
    record_evaluation(evaluate_sync(ALL, upper, ExactMatchStrategy()))
    record_evaluation(evaluate_sync(ALL[:1], upper, ExactMatchStrategy()), label="one")
    record_evaluation(evaluate_sync(ALL[:2], upper, ExactMatchStrategy()))


def test_without_evaluation():
    pass
"""

SUMMARY = [
    "=* aeval evaluations =*",
    "test_inner.py::test_half [[]PASSED]: Score 50.00% (1/2 passed) - 1 evaluation(s) failed "
    "[[]Tags: t: 50.00%, u: 0.00%]",
    "    - bad [[]ExactMatchStrategy]: 0.00% - Expected 'nope', got 'B'",
    "test_inner.py::test_full [[]PASSED]: Score 100.00% (4/4 passed)",
    "test_inner.py::test_full (one) [[]PASSED]: Score 100.00% (1/1 passed)",
    "test_inner.py::test_full (#3) [[]PASSED]: Score 100.00% (2/2 passed)",
    "Suite: 4 report(s), 8/9 evaluations passed, average score 88.89%",
]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=EVALUATIONS)
    return pytester


def test_terminal_summary_lists_every_evaluation(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([*SUMMARY, "=* 3 passed in *"])


def test_terminal_summary_shows_failed_tests_and_caps_the_failures(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_inner=textwrap.dedent(
            """
            from aeval import EvaluationSample, evaluate_sync
            from aeval.strategies import ExactMatchStrategy

            def test_many(record_evaluation):
                samples = [EvaluationSample(f"s{i:02}", ["x"], "y") for i in range(12)]
                report = record_evaluation(evaluate_sync(samples, str, ExactMatchStrategy()))
                assert report.score == 100
            """
        )
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "test_inner.py::test_many [[]FAILED]: Score 0.00% (0/12 passed) "
            "- 12 evaluation(s) failed",
            "    - s00 [[]ExactMatchStrategy]: 0.00% - Expected 'y', got \"Parameters([[]'x'])\"",
            "    - s09 [[]ExactMatchStrategy]: 0.00% - *",
            "    ... and 2 more not shown",
            "Suite: 1 report(s), 0/12 evaluations passed, average score 0.00%",
        ]
    )


def test_no_summary_section_without_evaluations(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "aeval evaluations" not in result.stdout.str()


IN_RUN_ORDER = [
    ("test_inner.py::test_half", None, 2, 1, 1, 50.0),
    ("test_inner.py::test_full", None, 4, 4, 0, 100.0),
    ("test_inner.py::test_full", "one", 1, 1, 0, 100.0),
    ("test_inner.py::test_full", "#3", 2, 2, 0, 100.0),
]
IN_ID_ORDER = [*IN_RUN_ORDER[1:], IN_RUN_ORDER[0]]


def check_report_dir(
    directory: Path, rows: list[tuple[str, str | None, int, int, int, float]]
) -> None:
    assert sorted(p.name for p in directory.iterdir()) == [
        "evaluation-suite-report.json",
        "evaluation-suite-report.md",
        "test_inner.py_test_full-3.json",
        "test_inner.py_test_full-3.md",
        "test_inner.py_test_full-one.json",
        "test_inner.py_test_full-one.md",
        "test_inner.py_test_full.json",
        "test_inner.py_test_full.md",
        "test_inner.py_test_half.json",
        "test_inner.py_test_half.md",
    ]
    half = json.loads((directory / "test_inner.py_test_half.json").read_text())
    assert (half["globalScore"], half["totalSamples"], half["passed"]) == (50.0, 2, 1)
    assert (
        (directory / "test_inner.py_test_full-one.md")
        .read_text()
        .startswith("# Evaluation Report\n\n**Global Score**: 100.00%\n")
    )
    suite = json.loads((directory / "evaluation-suite-report.json").read_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", suite.pop("timestamp"))
    assert suite["summary"] == {
        "totalReports": 4,
        "totalEvaluations": 9,
        "totalPassed": 8,
        "totalFailed": 1,
        "averageScore": 88.89,
        "partial": False,
        "partialReason": None,
    }
    assert [
        (r["test"], r["label"], r["evaluations"], r["passed"], r["failed"], r["score"])
        for r in suite["reports"]
    ] == rows
    markdown = (directory / "evaluation-suite-report.md").read_text()
    table = "".join(
        f"| {test}{'' if label is None else f' ({label})'} | {total} | {passed} | {failed} "
        f"| {score:.2f}% |\n"
        for test, label, total, passed, failed, score in rows
    )
    assert markdown.split("## Summary")[1] == (
        "\n\n- **Total Reports**: 4\n- **Total Evaluations**: 9\n- **Passed**: 8\n"
        "- **Failed**: 1\n- **Average Score**: 88.89%\n\n## Individual Reports\n\n"
        "| Test | Evaluations | Passed | Failed | Score |\n"
        "|------|-------------|--------|--------|-------|\n" + table
    )


def test_report_dir_gets_each_report_and_the_suite_report(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    target = tmp_path / "reports"
    result = project.runpytest("--aeval-report-dir", str(target))
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"Suite report written to {target}"])
    check_report_dir(target, IN_RUN_ORDER)


def test_relative_report_dir_resolves_against_the_invocation_directory(
    project: pytest.Pytester,
) -> None:
    project.runpytest("--aeval-report-dir", "out").assert_outcomes(passed=3)
    assert (project.path / "out" / "evaluation-suite-report.json").is_file()


def test_xdist_workers_results_merge_into_one_suite_report(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    target = tmp_path / "reports"
    result = project.runpytest_subprocess("-n", "2", "--aeval-report-dir", str(target))
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "=* aeval evaluations =*",
            "test_inner.py::test_full [[]PASSED]: Score 100.00% (4/4 passed)",
            "test_inner.py::test_full (one) [[]PASSED]: Score 100.00% (1/1 passed)",
            "test_inner.py::test_full (#3) [[]PASSED]: Score 100.00% (2/2 passed)",
            "test_inner.py::test_half [[]PASSED]: Score 50.00% (1/2 passed) *",
            "    - bad [[]ExactMatchStrategy]: 0.00% - Expected 'nope', got 'B'",
            "Suite: 4 report(s), 8/9 evaluations passed, average score 88.89%",
            f"Suite report written to {target}",
        ]
    )
    check_report_dir(target, IN_ID_ORDER)


def test_min_score_fails_a_session_whose_tests_all_passed(project: pytest.Pytester) -> None:
    result = project.runpytest("--aeval-min-score", "90")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            *SUMMARY,
            "FAILED: the suite's average score 88.89% is below --aeval-min-score 90.00%",
        ]
    )


def test_min_score_met(project: pytest.Pytester) -> None:
    result = project.runpytest("--aeval-min-score", "88.8")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["The suite's average score 88.89% meets --aeval-min-score 88.80%"])


def test_min_score_without_evaluations_is_reported_not_failed(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("--aeval-min-score", "50")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["=* aeval evaluations =*", "--aeval-min-score 50.00% was not checked: no evaluation ran"]
    )


def test_min_score_out_of_range_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--aeval-min-score", "101")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--aeval-min-score is a percentage between 0 and 100, got 101"])


GOOD = """
from aeval import EvaluationSample, evaluate_sync
from aeval.strategies import ExactMatchStrategy


def test_good(record_evaluation):
    sample = EvaluationSample("good", ["a"], "A")
    shout = lambda params: params[0].upper()
    record_evaluation(evaluate_sync([sample], shout, ExactMatchStrategy()))
"""

BAD = GOOD.replace("test_good", "test_bad").replace('"A"', '"nope"')

CRASH = """
import os


def test_crash():
    os._exit(1)
"""


def test_a_crashed_xdist_worker_keeps_what_it_finished_and_marks_the_suite_partial(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # xdist sends 3 tests to 2 workers round robin: test_a (bad) and test_c (crash) go to
    # one worker, test_b (good) to the other; the crash loses that worker's workeroutput.
    pytester.makeini(INI)
    pytester.makepyfile(test_a=BAD, test_b=GOOD, test_c=CRASH)
    target = tmp_path / "reports"
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--aeval-report-dir", str(target), "--aeval-min-score", "40"
    )
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "=* aeval evaluations =*",
            "test_a.py::test_bad [[]PASSED]: Score 0.00% (0/1 passed) *",
            "*",
            "test_b.py::test_good [[]PASSED]: Score 100.00% (1/1 passed)",
            "Suite: 2 report(s), 1/2 evaluations passed, average score 50.00%",
            "Partial suite: pytest-xdist worker gw* crashed while running "
            "test_c.py::test_crash; the evaluations it had not finished are missing",
            f"Suite report written to {target}",
            "FAILED: --aeval-min-score 40.00% cannot be checked: the suite is partial; the "
            "average score of the evaluations that finished is 50.00%",
        ]
    )
    summary = json.loads((target / "evaluation-suite-report.json").read_text())["summary"]
    assert (summary["averageScore"], summary["totalEvaluations"]) == (50.0, 2)
    assert summary["partial"] is True
    assert "test_c.py::test_crash" in summary["partialReason"]
    assert "- **Partial**: pytest-xdist worker" in (
        target / "evaluation-suite-report.md"
    ).read_text(encoding="utf-8")
