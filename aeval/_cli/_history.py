"""Where ``aeval`` keeps runs, and the commands that read them: ``aeval runs`` and
``aeval history``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread

from .._display import printable
from .._util._files import write_atomic
from ..formatters._registry import render
from ..formatters._terminal import terminal_console
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
    from .._store import DEFAULT_STORE_PATH

    return DEFAULT_STORE_PATH.absolute()


def read_store_path(flag: Path | None) -> Path:
    """The store ``aeval runs`` and ``aeval history`` read: ``--store``, ``AEVAL_STORE``, or
    ``.aeval/runs.sqlite`` in the working directory.

    Raises:
        UsageError: ``AEVAL_STORE`` turns the store off and no ``--store`` was given.
    """
    from .._store import DEFAULT_STORE_PATH

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
    from .._store import DEFAULT_STORE_PATH

    return UsageError(
        f"{path}: no run store there: `aeval run CONFIG` records each run in "
        f"{DEFAULT_STORE_PATH} (under the working directory); give another with --store PATH "
        f"or {STORE_ENV}"
    )


def runs_command(args: argparse.Namespace) -> int:
    """``aeval runs [NAME]``: the last ``--last`` runs, oldest first (shard runs with
    ``--shards``).

    Raises:
        UsageError: No run store where it is looked for.
    """
    return anyio.run(_runs, args, read_store_path(args.store))


async def _runs(args: argparse.Namespace, path: Path) -> int:
    from .._store import RunStore
    from ..formatters._history_terminal import print_runs

    if not await anyio.Path(path).is_file():
        raise _no_store(path)
    name, last, shards = args.name, args.last, args.shards
    async with RunStore(path) as store:
        runs = await store.runs(name, last=last, shards=shards)
        total = len(await store.runs(name, shards=shards)) if len(runs) == last else len(runs)
    if args.format == "json":
        sys.stdout.write(render("runs", "json", runs))
        return 0
    print_runs(terminal_console(), runs, path=path, name=name, total=total)
    return 0


def history_command(args: argparse.Namespace) -> int:
    """``aeval history NAME``: the pass rate of each run of NAME, oldest first (shard runs
    with ``--shards``).

    Raises:
        UsageError: No run store where it is looked for, or a wrong ``--since``, ``--tag``
            or ``--strategy``.
    """
    return anyio.run(_history, args, read_store_path(args.store))


async def _history(args: argparse.Namespace, path: Path) -> int:
    from .._store import RunStore, parse_since
    from ..formatters._history import History
    from ..formatters._history_terminal import print_history

    if not await anyio.Path(path).is_file():
        raise _no_store(path)
    try:
        moment = parse_since(args.since)
    except ValueError as exc:
        raise UsageError(f"--since: {str(exc).removeprefix('since: ')}") from None
    name, tag, strategy = args.name, args.tag, args.strategy
    async with RunStore(path) as store:
        try:
            points = await store.history(
                name, tag=tag, strategy=strategy, since=moment, shards=args.shards
            )
        except ValueError as exc:
            option = "--tag" if tag is not None else "--strategy"
            raise UsageError(f"{option}: {exc}") from None
    if args.last is not None:
        points = points[-args.last :]
    history = History(name, points, tag=tag, strategy=strategy, since=moment)
    if args.format == "table":
        print_history(history)
        return 0
    text = render("history", args.format, history)
    output: Path | None = args.output
    if output is None:
        sys.stdout.write(text)
    else:
        await anyio.Path(output.parent).mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(write_atomic, output, text)
        sys.stdout.write(printable(f"History written to {output}") + "\n")
    return 0


def config_error(config: RunConfig, exc: Exception) -> ConfigError:
    """A store problem met by ``aeval run``, as a configuration error with the way out."""
    return ConfigError(
        str(config.path),
        [f"{exc}; or run without recording: --no-store (or store: false in {config.path.name})"],
    )
