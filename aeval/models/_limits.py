"""Limits that belong to a model client: request and token budgets, and its statistics."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio

from ._clock import Clock, check_clock

__all__ = ["SHARE_LIMITS", "LimitSpec", "ModelStatistics", "SharedLimits", "TokenBucket"]


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """A model client's limits, as an executor shares them across its workers.

    Attributes:
        name: The client, for messages (``"OpenAIChatModel('gpt-4o-mini')"``).
        max_concurrency: Requests in flight at once.
        requests_per_minute: The request budget, if any.
        tokens_per_minute: The token budget, if any.
    """

    name: str
    max_concurrency: int
    requests_per_minute: float | None
    tokens_per_minute: float | None


@runtime_checkable
class SharedLimits(Protocol):
    """**Protocol:** one client's limits held in one place for every copy of the client.

    A model client sent to the workers of an executor (``aeval.ray``) is copied into each
    worker; the copies take their concurrency slots and budgets here, so that the cap and the
    budgets hold across the cluster rather than per worker.
    """

    async def acquire(self, tokens: float) -> tuple[int, bool]:
        """Wait for a slot and the budgets (one request, ``tokens`` tokens).

        Returns:
            The lease to release, and whether the request waited for a budget.
        """
        ...

    async def release(self, lease: int) -> None:
        """Give the slot of ``lease`` back."""
        ...

    def adjust(self, delta: float) -> None:
        """Correct the token estimate after the reply (positive: more were used)."""
        ...


SHARE_LIMITS: ContextVar[Callable[[LimitSpec, object], SharedLimits] | None] = ContextVar(
    "aeval_share_limits", default=None
)
"""Set by an executor while it serialises strategies: a model client being pickled asks it
for the :class:`SharedLimits` its copies will use (given its spec and itself, so that one
client used by two strategies shares one budget)."""


@dataclass(frozen=True, slots=True)
class ModelStatistics:
    """A snapshot of what a model client has done (see ``statistics()`` on the clients).

    Attributes:
        requests: HTTP requests sent, retries included.
        retries: Requests that repeated a failed one.
        failures: Calls that raised after their retries.
        in_flight: Requests holding a concurrency slot right now.
        waiting: Calls waiting for a concurrency slot right now.
        max_concurrency: The concurrency cap.
        throttled: Requests that waited for the requests- or tokens-per-minute budget.
        prompt_tokens: Prompt tokens the server reported.
        completion_tokens: Completion tokens the server reported.
    """

    requests: int
    retries: int
    failures: int
    in_flight: int
    waiting: int
    max_concurrency: int
    throttled: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class TokenBucket:
    """A per-minute budget refilled continuously, holding at most one second's worth.

    ``acquire(n)`` takes ``n`` units, waiting (once, for exactly the time the refill needs)
    when the bucket is short; waiters are served first come, first served. A request larger
    than the bucket waits for a full bucket and leaves it in debt, so later requests wait
    longer: the average rate never exceeds the budget. ``adjust(delta)`` corrects an estimate
    after the fact (positive: more was used than taken).

    The lock is created on first use, inside the event loop. Time is read from and waited on
    ``clock`` (the event loop's by default).
    """

    __slots__ = ("_capacity", "_clock", "_level", "_lock", "_rate", "_updated", "per_minute")

    def __init__(self, per_minute: float, *, clock: Clock | None = None) -> None:
        if per_minute <= 0:
            raise ValueError(f"a per-minute budget must be positive, got {per_minute}")
        self._clock = check_clock(clock)
        self.per_minute = per_minute
        self._rate = per_minute / 60.0
        self._capacity = max(1.0, self._rate)
        self._level = self._capacity
        self._updated: float | None = None
        self._lock: anyio.Lock | None = None

    def _refill(self) -> None:
        now = self._clock.now()
        if self._updated is not None:
            elapsed = now - self._updated
            self._level = min(self._capacity, self._level + elapsed * self._rate)
        self._updated = now

    async def acquire(self, amount: float) -> bool:
        """Take ``amount`` units, waiting for the refill if needed; return whether it waited."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            self._refill()
            needed = min(amount, self._capacity)
            waited = False
            if self._level < needed:
                await self._clock.sleep((needed - self._level) / self._rate)
                self._refill()
                waited = True
            self._level -= amount
            return waited

    def adjust(self, delta: float) -> None:
        """Take ``delta`` more units (or give back ``-delta``) without waiting."""
        self._level = min(self._capacity, self._level - delta)

    def reset(self) -> None:
        """Forget the loop-bound lock (a new event loop is using the client)."""
        self._lock = None
        self._updated = None
        self._level = self._capacity
