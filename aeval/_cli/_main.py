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

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress

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
)
from ._parser import build_parser
from ._process import exit_past, lingering_threads

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


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs ``command`` and returns its exit code; its module is imported
    only when the command runs."""
    match command:
        case "schema":
            from ._schema import schema_command as handler
        case "compare":
            from ._compare import run_compare as handler
        case "calibrate":
            from ._calibrate import run_calibrate as handler
        case "dataset":
            from ._dataset import run_dataset as handler
        case "report":
            from ._merge_report import report_command as handler
        case "runs":
            from ._history import runs_command as handler
        case "history":
            from ._history import history_command as handler
        case "merge":
            from ._merge_report import merge as handler
        case "view":
            from ._view import view_command as handler
        case "rescore":
            from ._run_command import rescore as handler
        case _:
            from ._run_command import run_command as handler
    return handler


def _command(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = build_parser(_chosen(given)).parse_args(given)
    try:
        return _handler(args.command)(args)
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
