"""The ``aeval`` command: ``run``, ``merge``, ``report``, ``runs``, ``history``, ``compare``,
``calibrate``, ``dataset``, ``view`` and ``schema``.

Exit codes: 0 every threshold (and gate) met, 1 a threshold or a comparison's gate missed (or
no row could be scored), 2 a configuration or usage error (the message, on stderr, names the
file and the key, or the side of a comparison; nothing was evaluated), 3 an error stopped the
run (the report is partial), 4 the run met its thresholds but its ``--baseline`` could not be
compared with it, 129 stopped by SIGHUP, 130 interrupted by Ctrl-C (or a target raising
``KeyboardInterrupt``), 141 the reader of stdout left, 143 stopped by SIGTERM. The first signal
decides: later ones are ignored until the command ends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from functools import partial

import anyio

from .._exceptions import (
    ComparisonError,
    ExecutorError,
    FormatError,
    MergeError,
    MissingExtraError,
    ReportWriteError,
    SampleLoadError,
    StoreError,
)
from ._compare import run_compare
from ._config import ConfigError
from ._exits import (
    EXIT_BASELINE,
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_HANGUP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_ERROR,
    EXIT_TERMINATED,
    error,
)
from ._history import (
    UsageError,
    history_command,
    read_store_path,
    runs_command,
)
from ._parser import build_parser
from ._process import exit_past, lingering_threads
from ._run_command import rescore, run_command

__all__ = [
    "EXIT_BASELINE",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUN_ERROR",
    "EXIT_TERMINATED",
    "main",
]


def _reader_left() -> int:
    """The reader of standard output went away (``aeval report ... | head``): stop quietly,
    with the exit code of a process ended by SIGPIPE, as other command-line tools do."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing left to flush at exit
    return 128 + 13


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``aeval`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Called as the program (no ``argv``), it does not wait for threads that the target or a
    strategy started and left running (non-daemon threads would keep the process alive after
    its verdict): it says so on stderr and ends the process with the exit code.
    """
    try:
        code = _command(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_left()
    if argv is None and (threads := lingering_threads()):
        exit_past(threads, code)
    return code


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names first, if it names one before any option."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def _command(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = build_parser(_chosen(given)).parse_args(given)
    try:
        if args.command == "schema":
            from ._schema import schema_text

            sys.stdout.write(schema_text())
            return EXIT_OK
        if args.command == "compare":
            return run_compare(args)
        if args.command == "calibrate":
            from ._calibrate import run_calibrate

            return run_calibrate(args)
        if args.command == "dataset":
            from ._dataset import run_dataset

            return run_dataset(args)
        if args.command == "report":
            from ._merge_report import report

            if not args.rows.is_file():
                return error(f"{args.rows}: no such file")
            anyio.run(report, args.rows, args.format, args.output)
            return EXIT_OK
        if args.command == "runs":
            path = read_store_path(args.store)
            return anyio.run(
                partial(
                    runs_command,
                    path=path,
                    name=args.name,
                    last=args.last,
                    format=args.format,
                    shards=args.shards,
                )
            )
        if args.command == "history":
            path = read_store_path(args.store)
            return anyio.run(
                partial(
                    history_command,
                    path=path,
                    name=args.name,
                    tag=args.tag,
                    strategy=args.strategy,
                    since=args.since,
                    last=args.last,
                    format=args.format,
                    output=args.output,
                    shards=args.shards,
                )
            )
        if args.command == "merge":
            from ._merge_report import merge

            return merge(args)
        if args.command == "view":
            from ._view import view_command

            return view_command(args)
        if args.command == "rescore":
            return rescore(args)
        return run_command(args)
    except ConfigError as exc:
        for problem in exc.problems:
            error(problem)
        return EXIT_CONFIG
    except (
        FormatError,
        SampleLoadError,
        ComparisonError,
        StoreError,
        UsageError,
        MergeError,
        ExecutorError,
        MissingExtraError,
    ) as exc:
        return error(str(exc))
    except ReportWriteError as exc:
        error(str(exc))
        return EXIT_RUN_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("aeval: interrupted\n")
        return EXIT_INTERRUPTED
