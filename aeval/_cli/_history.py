"""Where ``aeval`` keeps runs, and the commands that read them: ``aeval runs`` and
``aeval history``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
from rich import box
from rich.console import Console
from rich.table import Table

from .._display import printable
from .._store import DEFAULT_STORE_PATH, RunStore, RunSummary
from .._store._render import (
    History,
    commit_text,
    history_html,
    history_json,
    history_markdown,
    runs_json,
    sparkline,
    utc,
)
from .._store._values import parse_since
from .._terminal import plain, print_line, print_table, terminal_console
from .._util._files import write_atomic
from .._util._numbers import format_interval, format_percent
from ._config import ConfigError, RunConfig

__all__ = [
    "STORE_ENV",
    "UsageError",
    "history_command",
    "read_store_path",
    "run_store_path",
    "runs_command",
]

STORE_ENV = "AEVAL_STORE"
_OFF = frozenset({"0", "false", "no", "off"})


class UsageError(Exception):
    """A command-line problem that is not in a configuration file (exit code 2)."""


def _from_env() -> Path | Literal[False] | None:
    value = os.environ.get(STORE_ENV, "").strip()
    if not value:
        return None
    if value.lower() in _OFF:
        return False
    return Path(value).expanduser().absolute()


def run_store_path(config: RunConfig, *, flag: Path | None, disabled: bool) -> Path | None:
    """Where ``aeval run`` records the run, ``None`` for nowhere.

    ``--no-store`` and ``--store PATH`` win, then ``AEVAL_STORE`` (a path, or ``false``),
    then the configuration's ``store:`` (a path, or ``false``), then ``.aeval/runs.sqlite``
    in the working directory.
    """
    if disabled:
        return None
    if flag is not None:
        return flag.expanduser().absolute()
    env = _from_env()
    if env is not None:
        return env or None
    if config.store is not None:
        return config.store or None
    return DEFAULT_STORE_PATH.absolute()


def read_store_path(flag: Path | None) -> Path:
    """The store ``aeval runs`` and ``aeval history`` read: ``--store``, ``AEVAL_STORE``, or
    ``.aeval/runs.sqlite`` in the working directory.

    Raises:
        UsageError: ``AEVAL_STORE`` turns the store off and no ``--store`` was given.
    """
    if flag is not None:
        return flag.expanduser().absolute()
    env = _from_env()
    if env is False:
        raise UsageError(
            f"{STORE_ENV}={os.environ[STORE_ENV]} turns the run store off: pass --store PATH "
            "to read one"
        )
    return env if env is not None else DEFAULT_STORE_PATH.absolute()


def _no_store(path: Path) -> UsageError:
    return UsageError(
        f"{path}: no run store there: `aeval run CONFIG` records each run in "
        f"{DEFAULT_STORE_PATH} (under the working directory); give another with --store PATH "
        f"or {STORE_ENV}"
    )


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
    return f"{format_percent(score)} {format_interval(score, interval)}"


def _note(run: RunSummary) -> str:
    parts = [] if run.shard is None else [f"shard {run.shard}"]
    if run.partial:
        expected = f" of {run.samples_expected}" if run.samples_expected is not None else ""
        end = "" if run.finished_at is not None else ", no end recorded"
        parts.append(f"partial ({run.samples}{expected} samples{end})")
    parts += run.labels
    return ", ".join(parts)


async def runs_command(
    *,
    path: Path,
    name: str | None,
    last: int,
    format: Literal["table", "json"],
    shards: bool = False,
) -> int:
    """``aeval runs [NAME]``: the last ``last`` runs, oldest first (shard runs with
    ``shards``)."""
    if not await anyio.Path(path).is_file():
        raise _no_store(path)
    async with RunStore(path) as store:
        runs = await store.runs(name, last=last, shards=shards)
        total = len(await store.runs(name, shards=shards)) if len(runs) == last else len(runs)
    if format == "json":
        sys.stdout.write(runs_json(runs))
        return 0
    console = terminal_console()
    if not runs:
        where = f" named {name!r}" if name is not None else ""
        print_line(console, f"No run{where} in {path}.")
        return 0
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
            plain(_note(run)),
        )
    _print_whole(console, table)
    if total > len(runs):
        print_line(console, f"{total - len(runs)} older run(s) not shown: --last N shows more.")
    return 0


async def history_command(
    *,
    path: Path,
    name: str,
    tag: str | None,
    strategy: str | None,
    since: str | None,
    last: int | None,
    format: Literal["table", "json", "markdown", "html"],
    output: Path | None,
    shards: bool = False,
) -> int:
    """``aeval history NAME``: the pass rate of each run of NAME, oldest first (shard runs
    with ``shards``)."""
    if not await anyio.Path(path).is_file():
        raise _no_store(path)
    try:
        moment = parse_since(since)
    except ValueError as exc:
        raise UsageError(f"--since: {str(exc).removeprefix('since: ')}") from None
    async with RunStore(path) as store:
        try:
            points = await store.history(
                name, tag=tag, strategy=strategy, since=moment, shards=shards
            )
        except ValueError as exc:
            option = "--tag" if tag is not None else "--strategy"
            raise UsageError(f"{option}: {exc}") from None
    if last is not None:
        points = points[-last:]
    history = History(name, points, tag=tag, strategy=strategy, since=moment)
    if format == "table":
        _print_history(history)
        return 0
    render = {"json": history_json, "markdown": history_markdown, "html": history_html}[format]
    text = render(history)
    if output is None:
        sys.stdout.write(text)
    else:
        await anyio.Path(output.parent).mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(write_atomic, output, text)
        sys.stdout.write(printable(f"History written to {output}") + "\n")
    return 0


def _print_history(history: History) -> None:
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


def config_error(config: RunConfig, exc: Exception) -> ConfigError:
    """A store problem met by ``aeval run``, as a configuration error with the way out."""
    return ConfigError(
        str(config.path),
        [f"{exc}; or run without recording: --no-store (or store: false in {config.path.name})"],
    )
