"""The run store's tables on the terminal: ``aeval runs`` and ``aeval history``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from .._store import RunSummary
from .._util._numbers import format_interval, format_percent
from ._history import History, commit_text, sparkline, utc
from ._terminal import plain, print_line, print_table, terminal_console

__all__ = ["print_history", "print_runs", "run_note"]


def _print_whole(console: Console, table: Table) -> None:
    """Print ``table`` at the width its cells need, wider than the console if need be.

    A run's id, score and note must stay whole (a partial run is said in its note): a log or
    a pipe (80 columns for rich) takes long lines as they are, and a narrow terminal wraps
    them rather than losing columns.
    """
    print_table(console, table, whole_rows=True)


def _columns(table: Table, columns: tuple[str, ...]) -> None:
    for column in columns:
        fixed = column not in ("name", "note")
        table.add_column(
            column,
            justify="right" if column in ("score (95% CI)", "samples") else "left",
            no_wrap=fixed,
            min_width={"id": 20, "run": 20, "name": 8}.get(column),
            overflow="fold",
        )


def _minute(moment: float) -> str:
    return utc(moment).removesuffix(" UTC")


def _score(score: float, interval: tuple[float, float]) -> str:
    return f"{format_percent(score)} {format_interval(interval)}"


def run_note(run: RunSummary) -> str:
    """The note of a run in a list of runs: its shard, whether it is partial, its labels."""
    parts = [] if run.shard is None else [f"shard {run.shard}"]
    if run.partial:
        expected = f" of {run.samples_expected}" if run.samples_expected is not None else ""
        end = "" if run.finished_at is not None else ", no end recorded"
        parts.append(f"partial ({run.samples}{expected} samples{end})")
    parts += run.labels
    return ", ".join(parts)


def print_runs(
    console: Console, runs: Sequence[RunSummary], *, path: Path, name: str | None, total: int
) -> None:
    """The table of ``runs`` (oldest first) in the store at ``path``; ``total`` counts the
    runs there are, to say how many older ones are not shown."""
    if not runs:
        where = f" named {name!r}" if name is not None else ""
        print_line(console, f"No run{where} in {path}.")
        return
    table = Table(
        title=plain(f"Runs in {path}" + (f" named {name}" if name else "")),
        box=box.SIMPLE,
        title_justify="left",
    )
    _columns(table, ("id", "name", "started (UTC)", "commit", "score (95% CI)", "samples", "note"))
    for run in runs:
        table.add_row(
            plain(run.id),
            plain(run.name),
            _minute(run.started_at),
            plain(commit_text(run.git_commit, run.git_dirty)),
            _score(run.score, run.interval),
            str(run.samples),
            plain(run_note(run)),
        )
    _print_whole(console, table)
    if total > len(runs):
        print_line(console, f"{total - len(runs)} older run(s) not shown: --last N shows more.")


def print_history(history: History) -> None:
    """The table of a history's runs, then its sparkline, on standard output."""
    console = terminal_console()
    points = history.points
    if not points:
        since = f" since {utc(history.since)}" if history.since is not None else ""
        print_line(console, f"No run of {history.name!r}{since}.")
        return
    table = Table(
        title=plain(f"History of {history.name} ({history.subject})"),
        box=box.SIMPLE,
        title_justify="left",
    )
    _columns(table, ("run", "started (UTC)", "commit", "score (95% CI)", "samples", "note"))
    for point in points:
        note = ", ".join(
            [
                *([] if point.shard is None else [f"shard {point.shard}"]),
                *([] if point.complete else ["partial"]),
                *point.labels,
            ]
        )
        table.add_row(
            plain(point.run_id),
            _minute(point.started_at),
            plain(commit_text(point.git_commit, point.git_dirty)),
            _score(point.score, point.interval),
            str(point.samples),
            plain(note),
        )
    _print_whole(console, table)
    scores = [point.score for point in points]
    print_line(
        console,
        f"pass rate  {sparkline(scores)}  {format_percent(scores[0])} → "
        f"{format_percent(scores[-1])} (lowest {format_percent(min(scores))}, highest "
        f"{format_percent(max(scores))}; oldest first)",
    )
