"""The exit codes of the ``aeval`` command and its error line on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from .._display import printable

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_RUN_ERROR = 3
EXIT_BASELINE = 4
EXIT_HANGUP = 129
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
STOP_CODES = {"SIGHUP": EXIT_HANGUP, "SIGTERM": EXIT_TERMINATED}
"""The exit code of a run stopped by a signal (128 + its number); SIGINT and a target's
``KeyboardInterrupt`` give ``EXIT_INTERRUPTED``."""
INTERRUPTIONS = ("SIGINT", "KeyboardInterrupt")


def shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def error(message: str) -> int:
    sys.stderr.write(f"aeval: error: {printable(message)}\n")
    return EXIT_CONFIG
