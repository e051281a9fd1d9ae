"""The end of the ``aeval`` program: threads a target left running must not keep it alive."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from typing import NoReturn

__all__ = ["THREAD_GRACE", "exit_past", "lingering_threads"]

THREAD_GRACE = 2.0
"""Seconds the program waits for the non-daemon threads still running when a command ends
(worker threads that are closing) before it ends without them."""


def lingering_threads() -> list[threading.Thread]:
    """The non-daemon threads (other than the main one) still running after a grace of
    :data:`THREAD_GRACE` seconds for those that are ending."""
    main_thread = threading.main_thread()
    threads = [
        thread
        for thread in threading.enumerate()
        if thread is not main_thread and not thread.daemon and thread.is_alive()
    ]
    deadline = time.monotonic() + THREAD_GRACE
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread for thread in threads if thread.is_alive()]


def exit_past(threads: Sequence[threading.Thread], code: int) -> NoReturn:
    """End the process with ``code`` without waiting for ``threads`` (which Python would
    join at exit, forever if they never end), saying so on stderr."""
    names = ", ".join(repr(thread.name) for thread in threads[:5])
    more = f" and {len(threads) - 5} more" if len(threads) > 5 else ""
    sys.stderr.write(
        f"aeval: note: {len(threads)} non-daemon thread{'s' if len(threads) > 1 else ''} "
        f"({names}{more}) started by the target or a strategy still running; exiting without "
        "waiting for them (start such threads with daemon=True, or stop them)\n"
    )
    with suppress(OSError, ValueError):
        sys.stdout.flush()
    with suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)
