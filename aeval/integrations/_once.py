"""Patching a library once per process, whoever asks first."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

__all__ = ["once"]


def once(patch: Callable[[], None]) -> Callable[[], None]:
    """``patch`` made idempotent: the first call runs it under a lock, later calls (from any
    thread) return at once. A patch that raises has not happened and runs again next time."""
    lock = threading.Lock()
    done: list[bool] = []

    @functools.wraps(patch)
    def apply() -> None:
        with lock:
            if not done:
                patch()
                done.append(True)

    return apply
