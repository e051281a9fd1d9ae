"""The example suite ``examples/pytest_project/`` runs and passes as a user would run it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pytest_project"

SUMMARY = [
    "test_support_assistant.py::test_smoke_and_billing_answers [PASSED]: Score 100.00% "
    "(3/3 passed) [Tags: faq: 100.00%, smoke: 100.00%, billing: 100.00%]",
    "test_support_assistant.py::test_declared_evaluation [PASSED]: Score 100.00% (6/6 passed) "
    "[Tags: faq: 100.00%, smoke: 100.00%, account: 100.00%]",
    "test_support_assistant.py::test_each_strategy[ExactMatchStrategy] [PASSED]: Score 83.33% "
    "(5/6 passed) - 1 evaluation(s) failed [Tags: faq: 75.00%, smoke: 100.00%, "
    "billing: 100.00%, account: 100.00%]",
    "    - Warranty [ExactMatchStrategy]: 0.00% - Expected 'Our products carry a two-year "
    "warranty.', got \"I'm sorry, I don't know the answer to that yet.\"",
    "test_support_assistant.py::test_each_strategy[ContainsStrategy] [PASSED]: Score 83.33% "
    "(5/6 passed) - 1 evaluation(s) failed [Tags: faq: 75.00%, smoke: 100.00%, "
    "billing: 100.00%, account: 100.00%]",
    "    - Warranty [ContainsStrategy]: 0.00% - Found none of 1 text: 'Our products carry a "
    "two-year warranty.'",
    "test_support_assistant.py::test_smoke_case[Opening hours] [PASSED]: Score 100.00% "
    "(2/2 passed) [Tags: faq: 100.00%, smoke: 100.00%]",
    "test_support_assistant.py::test_smoke_case[Escalation] [PASSED]: Score 100.00% "
    "(2/2 passed) [Tags: smoke: 100.00%]",
    "test_support_assistant.py::test_billing_case[Refund policy] [PASSED]: Score 100.00% "
    "(2/2 passed) [Tags: faq: 100.00%, billing: 100.00%]",
    "test_support_assistant.py::test_off_topic_question_falls_back (fallback) [PASSED]: "
    "Score 100.00% (1/1 passed)",
    "Suite: 8 report(s), 26/28 evaluations passed, average score 92.86%",
]


def run_example(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("AEVAL_LIVE", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLE), "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def summary_lines(stdout: str) -> list[str]:
    section = stdout.split(" aeval evaluations ", 1)[1].split("\n", 1)[1]
    return section.split("\n=")[0].strip("\n").split("\n")


def test_example_suite_passes_and_prints_the_summary(tmp_path: Path) -> None:
    result = run_example(tmp_path, "-rs")
    assert result.returncode == 0, result.stdout + result.stderr
    # test_travel_agent.py's plain tests check traces, not reports: not in the summary
    assert "11 passed, 1 skipped" in result.stdout
    assert summary_lines(result.stdout) == SUMMARY
    assert re.search(
        r"SKIPPED \[1\] \S*test_support_assistant\.py:\d+: live evaluation test \(calls a real "
        r"model\): run it with --aeval-live, set aeval_live = true in the pytest configuration, "
        r"or set AEVAL_LIVE=1\n",
        result.stdout,
    )


def test_example_suite_writes_reports_and_meets_a_min_score(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    result = run_example(tmp_path, "--aeval-report-dir", str(reports), "--aeval-min-score", "90")
    assert result.returncode == 0, result.stdout + result.stderr
    assert summary_lines(result.stdout)[-3:] == [
        "Suite: 8 report(s), 26/28 evaluations passed, average score 92.86%",
        f"Suite report written to {reports}",
        "The suite's average score 92.86% meets --aeval-min-score 90.00%",
    ]
    suite = json.loads((reports / "evaluation-suite-report.json").read_text())
    assert suite["summary"]["totalReports"] == 8
    assert suite["summary"]["averageScore"] == 92.86
    assert len(list(reports.glob("test_support_assistant.py_*.md"))) == 8
    # the reports went to the directory asked for, none into the example
    assert not (EXAMPLE / "target").exists()
    assert not [p for p in EXAMPLE.rglob("*") if p.suffix in {".md", ".json", ".xml"}]
