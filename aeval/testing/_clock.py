"""A virtual clock for the model clients: waits take no time, deadlines follow the clock."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import anyio.lowlevel

__all__ = ["FakeClock"]


class FakeClock:
    """A virtual clock to pass as ``clock=`` to the model clients; sleeping on it is instant.

    :meth:`sleep` moves the time forward by the sleep's length at once, records it in
    :attr:`sleeps` and returns after a checkpoint, so retry waits, ``Retry-After`` waits and
    rate-limit waits take no real time and cannot depend on how loaded the machine is.
    Nothing else moves the time but :meth:`advance`: a request in flight takes no time on
    this clock. A deadline set with :meth:`move_on_after` (the clients' ``deadline``)
    expires when the time reaches it, through a sleep or through :meth:`advance`.

    Sleeps add up, whoever sleeps: the time is always the start plus every sleep and every
    advance so far, however the tasks were scheduled. Concurrent waits therefore take longer
    on this clock than they would take in real time, and a deadline sees every task's sleeps:
    a test of concurrent waits asserts on :attr:`sleeps` and keeps its deadlines generous.

    Example:
        >>> async def test_a_rate_limit_is_waited_out() -> None:
        ...     clock = FakeClock()
        ...     async with OpenAICompatibleServer([Reply.rate_limited(30), "true"]) as server:
        ...         model = OpenAIChatModel("judge", base_url=server.base_url, clock=clock)
        ...         assert (await model.chat("Is it right?")).retries == 1
        ...     assert 30.0 <= clock.now() <= 30.2  # Retry-After, plus jitter up to backoff

    Args:
        start: The time the clock starts at.

    Attributes:
        sleeps: Every sleep asked for, in seconds, in the order asked.
    """

    __slots__ = ("_deadlines", "_now", "sleeps")

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._deadlines: list[tuple[float, anyio.CancelScope]] = []
        self.sleeps: list[float] = []

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now!r}, sleeps={len(self.sleeps)})"

    def now(self) -> float:
        """The virtual time in seconds."""
        return self._now

    async def sleep(self, seconds: float, /) -> None:
        """Move the time ``seconds`` forward (expiring deadlines), then checkpoint.

        A deadline that expires cancels its scope, so a sleep past the deadline of the scope
        it runs in raises the cancellation at the checkpoint, as a real sleep would.
        """
        self.sleeps.append(seconds)
        self._move_to(self._now + max(0.0, seconds))
        await anyio.lowlevel.checkpoint()

    def advance(self, seconds: float) -> None:
        """Move the time ``seconds`` forward without sleeping, expiring deadlines.

        For a test that holds a request in flight (a slow server) and lets the client's
        deadline pass.
        """
        if seconds < 0 or math.isnan(seconds):
            raise ValueError(f"the clock only moves forward, got {seconds}")
        self._move_to(self._now + seconds)

    @contextmanager
    def move_on_after(self, seconds: float, /) -> Iterator[anyio.CancelScope]:
        """A cancel scope cancelled once this clock reaches ``seconds`` from now."""
        entry = (self._now + seconds, anyio.CancelScope())
        self._deadlines.append(entry)
        try:
            with entry[1] as scope:
                self._move_to(self._now)
                yield scope
        finally:
            self._deadlines.remove(entry)

    def _move_to(self, time: float) -> None:
        self._now = max(self._now, time)
        for deadline, scope in self._deadlines:
            if deadline <= self._now:
                scope.cancel()
