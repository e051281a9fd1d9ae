"""The terminal summary of a report (``report.print()`` and the end of ``aeval run``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._reporting._judging import JUDGE_COLUMNS, judge_rows, panel_line
from .._reporting._report import partial_note
from .._reporting._run_info import timestamp
from .._util._numbers import describe_score, format_interval, format_percent, truncate
from ._header import conversations_text, not_applicable_text
from ._terminal import plain, print_line, print_table, terminal_console

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport

__all__ = ["ThresholdCheck", "print_report", "print_run_summary"]

_FAILURES_SHOWN = 20
_FLAKY_SHOWN = 20
_REASON_LENGTH = 160

Minimum = Callable[[str], str]


class ThresholdCheck(Protocol):
    """A threshold of ``aeval run`` and whether the run met it (``aeval._cli._summary.Check``)."""

    @property
    def name(self) -> str:
        """``"score"``, ``"tag <name>"`` or ``"kappa <strategy>"``."""
        ...

    @property
    def actual(self) -> float | None:
        """The score (or kappa) reached, ``None`` when no row counts toward it."""
        ...

    @property
    def minimum(self) -> float:
        """The threshold."""
        ...

    @property
    def passed(self) -> bool:
        """Whether the threshold is met (or does not apply)."""
        ...

    def describe(self) -> str:
        """The check as one line (``score 66.67% < 80.00%``)."""
        ...


def _no_minimum(name: str) -> str:
    return ""


def print_report(
    report: EvaluationReport,
    *,
    console: Console | None = None,
    minimum: Minimum = _no_minimum,
    extra: Sequence[tuple[str, str]] = (),
) -> None:
    """Print the score with its interval, the tables per tag, strategy and repeat, and failures.

    Args:
        report: The report.
        console: Where to print (default: a new console on standard output).
        minimum: Gives the threshold text for ``"score"`` or ``"tag <name>"`` (the CLI's gate).
        extra: Rows added at the top of the overview (the CLI's config path).
    """
    console = console if console is not None else terminal_console()
    note = partial_note(report)
    title = f"Evaluation summary (PARTIAL: {note})" if note else "Evaluation summary"
    overview = Table(title=plain(title), box=box.SIMPLE, show_header=False, title_justify="left")
    overview.add_column("what", style="bold", no_wrap=True)
    overview.add_column("value", overflow="fold")

    def add(key: str, value: str) -> None:
        overview.add_row(plain(key), plain(value))

    for key, value in extra:
        add(key, value)
    expected = report.samples_expected
    samples = (
        f"{report.sample_count} of {expected}" if expected is not None else str(report.sample_count)
    )
    repeats = report.run.repeats
    add(
        "samples",
        f"{samples} evaluated" + (f", {repeats} repeats each" if repeats > 1 else ""),
    )
    add(
        "rows",
        f"{report.evaluation_count} ({report.passed_count} passed, {report.failed_count} "
        f"failed, {report.unscored_count} unscored, {report.skipped_count} skipped, "
        f"{report.error_count} errors"
        + (f", {report.not_applicable_count} not applicable" if report.not_applicable_count else "")
        + ")",
    )
    if report.not_applicable_count:
        add("not applicable", not_applicable_text(report))
    if report.function_error_count:
        add(
            "failed calls",
            f"{report.function_error_count} (each gives one error row per strategy)",
        )
    score = describe_score(report.score, report.confidence_interval(), report.sample_count)
    threshold = minimum("score")
    add("score", score + (f"  (min {threshold})" if threshold else ""))
    if report.repeat_statistics is not None:
        add("flaky", f"{len(report.flaky)} of {report.repeat_statistics.pairs}")
    run = report.run
    add(
        "run",
        f"{timestamp(run.started_at)} → {timestamp(run.finished_at)}, {_took(report)}",
    )
    where = f"aeval {run.aeval_version or '?'}"
    if run.concurrency is not None:
        where += f", concurrency {run.concurrency}"
    if run.executor is not None:
        where += f" on {run.executor}"
    if run.shard is not None:
        where += f", shard {run.shard}"
    if run.tools is not None:
        where += f", tools {run.tools}"
    if run.git_commit:
        where += f", commit {run.git_commit[:12]}"
    add("setup", where)
    usage = report.usage
    if usage.retries or usage.total_tokens or usage.cost:
        cost = f", ${usage.cost:.4f}" if usage.cost else ""
        calls = f", {usage.user_model_calls} simulated-user calls" if usage.user_model_calls else ""
        add("model usage", f"{usage.total_tokens} tokens, {usage.retries} retries{calls}{cost}")
    if report.conversations:
        add("conversations", conversations_text(report.conversations))
    print_table(console, overview)
    _tags(console, report, minimum)
    _strategies(console, report)
    _calibration(console, report)
    _judges(console, report)
    _repeats(console, report)
    _failures(console, report)
    for warning in report.warnings:
        print_line(console, f"warning: {warning}")


def _number_columns(table: Table, columns: Sequence[str], *, text: Sequence[str] = ()) -> None:
    """Text columns (``text``) fold; the others hold numbers and never wrap."""
    for column in columns:
        if column in text:
            table.add_column(column, justify="left", overflow="fold")
        else:
            table.add_column(column, justify="right", no_wrap=True)


def _tags(console: Console, report: EvaluationReport, minimum: Minimum) -> None:
    if not report.tag_statistics:
        return
    table = Table(title="Score per tag", box=box.SIMPLE, title_justify="left")
    columns = ("tag", "samples", "rows", "passed", "score", "95% CI", "minimum")
    _number_columns(table, columns, text=("tag",))
    for tag, stats in report.tag_statistics.items():
        table.add_row(
            plain(tag),
            str(stats.samples),
            str(stats.total),
            str(stats.passed),
            format_percent(stats.score),
            format_interval(stats.confidence_interval()),
            plain(minimum(f"tag {tag}")),
        )
    print_table(console, table)


def _strategies(console: Console, report: EvaluationReport) -> None:
    if not report.strategy_statistics:
        return
    table = Table(title="Score per strategy", box=box.SIMPLE, title_justify="left")
    columns: tuple[str, ...] = ("strategy", "rows", "passed", "failed", "unscored", "skipped")
    columns += ("errors", "n/a") if report.not_applicable_count else ("errors",)
    _number_columns(table, (*columns, "score", "95% CI"), text=("strategy",))
    for name, s in report.strategy_statistics.items():
        counts = (s.total, s.passed, s.failed, s.unscored, s.skipped, s.errors, s.not_applicable)
        table.add_row(
            plain(name),
            *(str(n) for n in counts[: len(columns) - 1]),
            format_percent(s.score),
            format_interval(s.confidence_interval()),
        )
    print_table(console, table)


def _calibration(console: Console, report: EvaluationReport) -> None:
    for name, calibration in report.calibration.items():
        (pass_pass, pass_fail), (fail_pass, fail_fail) = calibration.confusion
        print_line(console, f"Judge calibration: {name}: {calibration.describe()}")
        table = Table(box=box.SIMPLE)
        _number_columns(
            table, ("human label", "verdict pass", "verdict fail"), text=("human label",)
        )
        table.add_row("pass", str(pass_pass), str(pass_fail))
        table.add_row("fail", str(fail_pass), str(fail_fail))
        print_table(console, table)
        if calibration.disagreements:
            shown = ", ".join(d.sample for d in calibration.disagreements[:_FLAKY_SHOWN])
            more = len(calibration.disagreements) - _FLAKY_SHOWN
            print_line(
                console,
                f"Disagreements ({len(calibration.disagreements)}): {shown}"
                + (f" ... and {more} more in the reports" if more > 0 else ""),
            )


def _judges(console: Console, report: EvaluationReport) -> None:
    if not report.judge_statistics:
        return
    table = Table(title="Judges", box=box.SIMPLE, title_justify="left")
    _number_columns(table, JUDGE_COLUMNS, text=JUDGE_COLUMNS[:2])
    for row in judge_rows(report.judge_statistics):
        table.add_row(*(plain(cell) for cell in row))
    print_table(console, table)
    for strategy, stats in report.judge_statistics.items():
        line = panel_line(strategy, stats)
        if line is not None:
            print_line(console, line)


def _repeats(console: Console, report: EvaluationReport) -> None:
    stats = report.repeat_statistics
    if stats is None:
        return
    table = Table(
        title=f"Repeats ({stats.repeats} per sample)", box=box.SIMPLE, title_justify="left"
    )
    _number_columns(table, ("k", "pass@k", "pass^k"))
    for k in sorted(stats.pass_at_k):
        table.add_row(
            str(k),
            format_percent(100 * stats.pass_at_k[k]),
            format_percent(100 * stats.pass_hat_k[k]),
        )
    print_table(console, table)
    if stats.output_agreement is not None:
        print_line(
            console,
            f"Output agreement: {format_percent(100 * stats.output_agreement)} of repeats give "
            f"the most common output ({len(stats.inconsistent)} samples disagree)",
        )
    if stats.flaky:
        flaky = Table(
            title=f"Flaky ({len(stats.flaky)}: some repeats passed, some did not)",
            box=box.SIMPLE,
            title_justify="left",
        )
        _number_columns(flaky, ("sample", "strategy", "passed"), text=("sample", "strategy"))
        for case in stats.flaky[:_FLAKY_SHOWN]:
            flaky.add_row(
                plain(case.sample),
                plain(case.strategy or "(function)"),
                f"{case.passed}/{case.runs}",
            )
        print_table(console, flaky)
        if len(stats.flaky) > _FLAKY_SHOWN:
            print_line(console, f"... and {len(stats.flaky) - _FLAKY_SHOWN} more in the reports")


def _failures(console: Console, report: EvaluationReport) -> None:
    failures = report.failures
    if not failures:
        return
    table = Table(
        title=f"Failures ({report.not_passed_count})", box=box.SIMPLE, title_justify="left"
    )
    for column in ("sample", "strategy", "outcome", "reason"):
        if column in ("strategy", "outcome"):
            table.add_column(column, no_wrap=True)
        else:
            table.add_column(column, overflow="fold")
    for row in failures[:_FAILURES_SHOWN]:
        name = row.name if row.repeat == 0 else f"{row.name} [repeat {row.repeat + 1}]"
        cells: tuple[Text, ...] = (
            plain(name),
            plain(row.strategy or "(function)"),
            plain(row.outcome.value),
            plain(truncate(row.explanation or "", _REASON_LENGTH)),
        )
        table.add_row(*cells)
    print_table(console, table)
    if len(failures) > _FAILURES_SHOWN:
        print_line(console, f"... and {len(failures) - _FAILURES_SHOWN} more in the reports")


def _minimum(checks: Sequence[ThresholdCheck], name: str, *, interrupted: bool) -> str:
    for check in checks:
        if check.name == name:
            if interrupted:
                return f"{format_percent(check.minimum)} not checked"
            mark = "ok" if check.passed else "MISSED"
            return f"{format_percent(check.minimum)} {mark}"
    return ""


def print_run_summary(
    console: Console,
    report: EvaluationReport,
    *,
    config: Path,
    checks: Sequence[ThresholdCheck],
    files: Sequence[Path],
    interrupted: bool,
    stored: str | None = None,
) -> None:
    """Print the summary ``aeval run`` ends with: the report's (see ``report.print()``), the
    gate's notes and the files written.

    Args:
        config: The run's configuration file.
        stored: The run's id in the run store (and where), when it was recorded.
    """
    extra = [("config", str(config))]
    if stored is not None:
        extra.append(("run id", stored))
    print_report(
        report,
        console=console,
        minimum=partial(_minimum, checks, interrupted=interrupted),
        extra=extra,
    )
    for check in checks:
        if check.actual is None and check.name not in _shown_tags(report):
            print_line(console, check.describe())
        elif check.name.startswith("kappa "):
            mark = "ok" if check.passed else "MISSED"
            print_line(console, f"{check.describe()} (min kappa {mark})")
    if files:
        print_line(console, "Files written:")
        for path in files:
            print_line(console, f"  {path}")


def _shown_tags(report: EvaluationReport) -> set[str]:
    return {f"tag {tag}" for tag in report.tag_statistics}


def _took(report: EvaluationReport) -> str:
    duration = report.duration
    if duration is None:
        return "duration unknown"
    if report.run.started_at is None:
        return f"{duration:.2f} s of calls, summed"
    return f"{duration:.2f} s wall clock"
