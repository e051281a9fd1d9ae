"""The ``aeval`` program as a process: how often it collects garbage while it evaluates,
and its end (threads a target left running must not keep it alive)."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import NoReturn

__all__ = ["GC_THRESHOLD", "THREAD_GRACE", "exit_past", "fewer_collections", "lingering_threads"]

GC_THRESHOLD = 10_000
"""The youngest generation's collection threshold while ``aeval run`` evaluates (Python's
default is 700). A run frees nearly every object it makes by reference counting, but its
working set (the samples read ahead, the rows in flight, the tasks) kept the net count of
new objects crossing 700 at every few rows: the collector took about a tenth of the CPU of
a 100,000-sample run, to find almost no garbage. Garbage in reference cycles is still
collected, after 10,000 net new objects rather than 700."""


@contextmanager
def fewer_collections(threshold: int = GC_THRESHOLD) -> Iterator[None]:
    """Within the block, collect the youngest generation after ``threshold`` net new objects
    (see :data:`GC_THRESHOLD`); the previous thresholds return on leaving. A threshold
    already as high, or 0 (automatic collection turned off), is left as it is."""
    previous = gc.get_threshold()
    if previous[0] == 0 or previous[0] >= threshold:
        yield
        return
    gc.set_threshold(threshold, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


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
