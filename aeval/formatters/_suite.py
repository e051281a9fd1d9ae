"""The suite report of the pytest plugin (``evaluation-suite-report.md`` and ``.json``).

The layout is upstream's (Quarkus LangChain4j ``SuiteEvaluationReporter``), "Test" in place of
"Test Class"; see :mod:`aeval._pytest_plugin._suite` for the entries.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import orjson

from .._util._numbers import format_number, format_percent

if TYPE_CHECKING:
    from .._pytest_plugin._suite import SuiteReport

__all__ = ["suite_json", "suite_markdown"]


def suite_markdown(suite: SuiteReport, *, generated: datetime | None = None) -> str:
    """The Markdown suite report: the totals, then one table row per report."""
    lines = [
        "# Evaluation Suite Report",
        "",
        f"**Generated**: {_timestamp(generated)}",
        "",
        "## Summary",
        "",
        f"- **Total Reports**: {suite.total_reports}",
        f"- **Total Evaluations**: {suite.total_evaluations}",
        f"- **Passed**: {suite.total_passed}",
        f"- **Failed**: {suite.total_failed}",
        f"- **Average Score**: {format_percent(suite.average_score)}",
        *([f"- **Partial**: {suite.partial}"] if suite.partial is not None else []),
        "",
        "## Individual Reports",
        "",
        "| Test | Evaluations | Passed | Failed | Score |",
        "|------|-------------|--------|--------|-------|",
    ]
    for entry in suite.entries:
        name = entry.name.replace("|", "\\|")
        lines.append(
            f"| {name} | {entry.evaluations} | {entry.passed} | {entry.failed} "
            f"| {format_percent(entry.score)} |"
        )
    return "\n".join(lines) + "\n"


def suite_json(suite: SuiteReport, *, generated: datetime | None = None) -> str:
    """The JSON suite report: upstream's keys, ``test`` in place of ``testClass``, and
    ``label``, ``errors``, ``tagScores``, ``outcome``, ``partial`` and ``partialReason``."""
    document = {
        "timestamp": _timestamp(generated),
        "summary": {
            "totalReports": suite.total_reports,
            "totalEvaluations": suite.total_evaluations,
            "totalPassed": suite.total_passed,
            "totalFailed": suite.total_failed,
            "averageScore": _rounded(suite.average_score),
            "partial": suite.partial is not None,
            "partialReason": suite.partial,
        },
        "reports": [
            {
                "test": entry.test_id,
                "label": entry.label,
                "evaluations": entry.evaluations,
                "passed": entry.passed,
                "failed": entry.failed,
                "errors": entry.errors,
                "score": _rounded(entry.score),
                "tagScores": {tag: _rounded(s) for tag, s in entry.tag_scores.items()},
                "outcome": entry.outcome,
            }
            for entry in suite.entries
        ],
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def _timestamp(generated: datetime | None) -> str:
    when = generated if generated is not None else datetime.now(UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _rounded(value: float) -> float:
    return float(format_number(value))
