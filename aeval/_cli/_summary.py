"""The gate (thresholds) and the summary printed at the end of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from .._numbers import format_percent, truncate
from .._report import EvaluationReport
from ._config import RunConfig

__all__ = ["Check", "check_thresholds", "print_summary", "verdict"]

_FAILURES_SHOWN = 20
_REASON_LENGTH = 160


@dataclass(frozen=True, slots=True)
class Check:
    """One threshold and whether the run met it.

    Attributes:
        name: ``"score"`` or ``"tag <name>"``.
        actual: The score reached, ``None`` when no row counts toward it.
        minimum: The threshold, in percent.
        passed: Whether the threshold is met (or does not apply).
        note: Why a threshold does not apply, if so.
    """

    name: str
    actual: float | None
    minimum: float
    passed: bool
    note: str | None = None

    def describe(self) -> str:
        """``score 66.67% < 80.00%`` or ``tag smoke 100.00% >= 100.00%``."""
        if self.actual is None:
            return f"{self.name}: {self.note}"
        sign = ">=" if self.actual >= self.minimum else "<"
        return f"{self.name} {format_percent(self.actual)} {sign} {format_percent(self.minimum)}"


def check_thresholds(report: EvaluationReport, config: RunConfig) -> list[Check]:
    """Compare the report with ``min_score`` and ``tag_min_scores``.

    A tag minimum whose tag has no rows fails the gate (a misspelt tag must not pass
    silently) unless a tag filter left that tag's samples out of the run.
    """
    checks: list[Check] = []
    if config.min_score is not None:
        score = report.score
        checks.append(Check("score", score, config.min_score, score >= config.min_score))
    statistics = report.tag_statistics
    for tag, minimum in config.tag_min_scores.items():
        name = f"tag {tag}"
        stats = statistics.get(tag)
        if stats is None or stats.total == 0:
            if config.tags and tag not in config.tags:
                checks.append(Check(name, None, minimum, True, "not run (left out by the tags)"))
            else:
                checks.append(Check(name, None, minimum, False, "no evaluated sample has it"))
            continue
        checks.append(Check(name, stats.score, minimum, stats.score >= minimum))
    return checks


def verdict(checks: Sequence[Check], *, interrupted: bool) -> str:
    """The last line of the summary."""
    if interrupted:
        return "INTERRUPTED: the report is partial; no threshold was checked"
    missed = [check for check in checks if not check.passed]
    if missed:
        return "FAILED: " + "; ".join(check.describe() for check in missed)
    if not checks:
        return "DONE: no threshold configured"
    return "PASSED: " + "; ".join(check.describe() for check in checks if check.actual is not None)


def _minimum(checks: Sequence[Check], name: str) -> str:
    for check in checks:
        if check.name == name:
            mark = "ok" if check.passed else "MISSED"
            return f"{format_percent(check.minimum)} {mark}"
    return ""


def print_summary(
    console: Console,
    report: EvaluationReport,
    *,
    config: RunConfig,
    checks: Sequence[Check],
    files: Sequence[Path],
    interrupted: bool,
    planned: int,
) -> None:
    """Print the score, per-tag and per-strategy scores, failures and files written."""
    title = "Evaluation summary (PARTIAL: interrupted)" if interrupted else "Evaluation summary"
    overview = Table(title=title, box=box.SIMPLE, show_header=False, title_justify="left")
    overview.add_column("what", style="bold")
    overview.add_column("value")
    overview.add_row("config", str(config.path))
    overview.add_row("samples", f"{report.sample_count} of {planned} evaluated")
    overview.add_row(
        "rows",
        f"{report.evaluation_count} ({report.passed_count} passed, {report.failed_count} "
        f"failed, {report.unscored_count} unscored, {report.error_count} errors)",
    )
    minimum = _minimum(checks, "score")
    overview.add_row(
        "score", format_percent(report.score) + (f"  (min {minimum})" if minimum else "")
    )
    overview.add_row("duration", f"{report.duration:.2f} s")
    usage = report.usage
    if usage.retries or usage.total_tokens:
        overview.add_row("model usage", f"{usage.total_tokens} tokens, {usage.retries} retries")
    console.print(overview)

    if report.tag_statistics:
        tags = Table(title="Score per tag", box=box.SIMPLE, title_justify="left")
        for column in ("tag", "rows", "passed", "score", "minimum"):
            tags.add_column(column, justify="left" if column == "tag" else "right")
        for tag, stats in report.tag_statistics.items():
            tags.add_row(
                tag,
                str(stats.total),
                str(stats.passed),
                format_percent(stats.score),
                _minimum(checks, f"tag {tag}"),
            )
        console.print(tags)

    if report.strategy_statistics:
        strategies = Table(title="Score per strategy", box=box.SIMPLE, title_justify="left")
        for column in ("strategy", "rows", "passed", "failed", "unscored", "errors", "score"):
            strategies.add_column(column, justify="left" if column == "strategy" else "right")
        for name, counts in report.strategy_statistics.items():
            strategies.add_row(
                name,
                str(counts.total),
                str(counts.passed),
                str(counts.failed),
                str(counts.unscored),
                str(counts.errors),
                format_percent(counts.score),
            )
        console.print(strategies)

    failures = report.failures
    if failures:
        table = Table(
            title=f"Failures ({report.not_passed_count})", box=box.SIMPLE, title_justify="left"
        )
        for column in ("sample", "strategy", "outcome", "reason"):
            table.add_column(column, overflow="fold")
        for row in failures[:_FAILURES_SHOWN]:
            name = row.name if row.repeat == 0 else f"{row.name} [repeat {row.repeat + 1}]"
            table.add_row(
                name,
                row.strategy or "(function)",
                row.outcome.value,
                truncate(row.explanation or "", _REASON_LENGTH),
            )
        console.print(table)
        if len(failures) > _FAILURES_SHOWN:
            console.print(f"... and {len(failures) - _FAILURES_SHOWN} more in the reports")

    for check in checks:
        if check.actual is None and check.name not in _shown_tags(report):
            console.print(f"{check.describe()}", highlight=False)
    if files:
        console.print("Files written:", highlight=False)
        for path in files:
            console.print(f"  {path}", highlight=False, soft_wrap=True)


def _shown_tags(report: EvaluationReport) -> set[str]:
    return {f"tag {tag}" for tag in report.tag_statistics}
