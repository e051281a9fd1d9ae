"""The time a model client waits on: its retry waits, its budgets and its deadline."""

from __future__ import annotations

import anyio

from ..abc import Clock

__all__ = ["LOOP_CLOCK", "Clock", "check_clock"]


class _LoopClock:
    """The event loop's clock."""

    __slots__ = ()

    def now(self) -> float:
        return anyio.current_time()

    async def sleep(self, seconds: float, /) -> None:
        await anyio.sleep(seconds)

    def move_on_after(self, seconds: float, /) -> anyio.CancelScope:
        return anyio.move_on_after(seconds)

    def __repr__(self) -> str:
        return "LOOP_CLOCK"


LOOP_CLOCK: Clock = _LoopClock()
"""The event loop's clock (anyio's ``current_time``, ``sleep`` and ``move_on_after``)."""


def check_clock(clock: Clock | None) -> Clock:
    """``clock``, or :data:`LOOP_CLOCK` for ``None``; a ``TypeError`` for anything else."""
    if clock is None:
        return LOOP_CLOCK
    if not isinstance(clock, Clock):
        raise TypeError(
            "clock must have now(), async sleep(seconds) and move_on_after(seconds), "
            f"e.g. aeval.testing.FakeClock(), got {clock!r}"
        )
    return clock
