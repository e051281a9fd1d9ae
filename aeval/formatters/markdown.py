"""The Markdown report (``report.md``).

The layout is upstream's (Quarkus LangChain4j ``MarkdownReportFormatter``), line for line,
with additions that leave the upstream lines intact:

- a counts line after the global score (left out of an empty report, which stays exactly
  upstream's), and a model-usage line (tokens, retries, cost) when strategies called models;
- a ``## Score per strategy`` block when the report has more than one strategy;
- in details mode, the outcomes ``UNSCORED`` and ``ERROR`` besides ``PASSED``/``FAILED``, a
  ``- Strategy:`` line, and ``#### Explanation`` / ``#### Error`` sections when present;
- ``(unscored)`` in place of a percentage for a row without a score;
- a note under ``## Details`` when the report does not hold every row.

Summary mode (``include_details=False``) prints upstream's ``- {name}: PASSED ({score}%)``.
Values are shown Java-style: ``None`` is ``null`` and a list is ``[a, b]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .._numbers import format_percent
from .._results import EvaluationRow
from ._base import check_options
from ._values import display_value

if TYPE_CHECKING:
    from .._report import EvaluationReport

__all__ = ["MarkdownFormatter"]

_DEFAULTS: dict[str, Any] = {"include_details": True}


class MarkdownFormatter:
    """Renders a report as Markdown.

    Options:
        include_details (bool): One section per row with its output, expected output,
            explanation and error (default ``True``); ``False`` gives one summary line per row.
    """

    name: ClassVar[str] = "markdown"
    extension: ClassVar[str] = ".md"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report`` (see the module docstring for the layout).

        Raises:
            FormatError: An unknown option, or ``include_details`` that is not a bool.
        """
        include_details: bool = check_options(self.name, options, _DEFAULTS)["include_details"]
        lines = ["# Evaluation Report", "", f"**Global Score**: {format_percent(report.score)}", ""]
        if report.evaluation_count:
            lines += [_counts_line(report), ""]
        usage = report.usage
        if usage.retries or usage.total_tokens or usage.cost:
            lines += [_usage_line(report), ""]
        tag_scores = report.tag_scores
        if tag_scores:
            lines += ["## Score per tags", ""]
            lines += [f"- **{tag}**: {format_percent(score)}" for tag, score in tag_scores.items()]
            lines.append("")
        strategy_scores = report.strategy_scores
        if len(strategy_scores) > 1:
            lines += ["## Score per strategy", ""]
            lines += [
                f"- **{name}**: {format_percent(score)}" for name, score in strategy_scores.items()
            ]
            lines.append("")
        lines += ["## Details", ""]
        held = len(report.evaluations)
        if not report.holds_all_rows and held < report.evaluation_count:
            lines += [
                f"_This report holds {held} of {report.evaluation_count} evaluations; "
                "the others were not kept._",
                "",
            ]
        render = _details if include_details else _summary
        for row in report.evaluations:
            render(row, lines)
        lines.append("")
        return "\n".join(lines)


def _counts_line(report: EvaluationReport) -> str:
    return (
        f"**Evaluations**: {report.evaluation_count} · **Passed**: {report.passed_count} · "
        f"**Failed**: {report.failed_count} · **Unscored**: {report.unscored_count} · "
        f"**Errors**: {report.error_count}"
    )


def _usage_line(report: EvaluationReport) -> str:
    usage = report.usage
    line = (
        f"**Model usage**: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
        f"tokens · {usage.retries} retries"
    )
    return f"{line} · ${usage.cost:.4f}" if usage.cost else line


def _heading(row: EvaluationRow) -> str:
    score = "unscored" if row.score is None else format_percent(row.score * 100)
    return f"{row.name}: {row.outcome.value.upper()} ({score})"


def _summary(row: EvaluationRow, lines: list[str]) -> None:
    lines.append(f"- {_heading(row)}")


def _details(row: EvaluationRow, lines: list[str]) -> None:
    lines.append(f"### {_heading(row)}")
    if row.strategy is not None:
        lines.append(f"- Strategy: {row.strategy}")
    lines += [
        "#### Result",
        display_value(row.output),
        "#### Expected Output",
        display_value(row.expected_output),
    ]
    error = str(row.error) if row.error is not None else None
    if row.explanation and row.explanation != error:
        lines += ["#### Explanation", row.explanation]
    if error is not None:
        lines += ["#### Error", error]
