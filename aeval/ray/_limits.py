"""Cluster-wide model limits: one actor holds every client's slots and budgets."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..models._limits import LimitSpec, TokenBucket

__all__ = ["LimiterActor", "LimitUsage", "RaySharedLimits"]


@dataclass(slots=True)
class LimitUsage:
    """What one shared limit has granted (see ``LimiterActor.statistics``).

    Attributes:
        name: The client.
        max_concurrency: Its cap.
        granted: Requests granted a slot.
        in_use: Slots held now.
        most_in_use: The most slots held at once.
        throttled: Requests that waited for a budget.
    """

    name: str
    max_concurrency: int
    granted: int = 0
    in_use: int = 0
    most_in_use: int = 0
    throttled: int = 0


@dataclass(slots=True)
class _Limit:
    spec: LimitSpec
    usage: LimitUsage
    slots: anyio.CapacityLimiter | None = None
    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None
    leases: dict[int, str] = field(default_factory=dict)


class LimiterActor:
    """Holds the concurrency caps and the request and token budgets of every shared client.

    The workers' copies of a client call :meth:`acquire` before each request and
    :meth:`release` after it; the slots of a worker that died are freed by
    :meth:`release_holder`.

    """

    def __init__(self) -> None:
        self._limits: dict[str, _Limit] = {}
        self._leases = itertools.count(1)

    def register(self, specs: Mapping[str, LimitSpec]) -> None:
        """Hold the limits of these clients (by key)."""
        self._limits |= {
            key: _Limit(
                spec,
                LimitUsage(spec.name, spec.max_concurrency),
                requests=None
                if spec.requests_per_minute is None
                else TokenBucket(spec.requests_per_minute),
                tokens=None
                if spec.tokens_per_minute is None
                else TokenBucket(spec.tokens_per_minute),
            )
            for key, spec in specs.items()
        }

    async def acquire(self, key: str, tokens: float, holder: str) -> tuple[int, bool]:
        """Wait for a slot and the budgets; return the lease and whether a budget held it."""
        limit = self._limits[key]
        if limit.slots is None:
            limit.slots = anyio.CapacityLimiter(limit.spec.max_concurrency)
        lease = next(self._leases)
        await limit.slots.acquire_on_behalf_of(lease)
        try:
            throttled = False
            if limit.requests is not None:
                throttled = await limit.requests.acquire(1)
            if limit.tokens is not None and tokens:
                throttled = await limit.tokens.acquire(tokens) or throttled
        except BaseException:
            limit.slots.release_on_behalf_of(lease)
            raise
        limit.leases[lease] = holder
        usage = limit.usage
        usage.granted += 1
        usage.in_use += 1
        usage.most_in_use = max(usage.most_in_use, usage.in_use)
        usage.throttled += throttled
        return lease, throttled

    def release(self, key: str, lease: int) -> None:
        """Give the slot of ``lease`` back (once; a second release is ignored)."""
        limit = self._limits[key]
        if limit.leases.pop(lease, None) is not None and limit.slots is not None:
            limit.slots.release_on_behalf_of(lease)
            limit.usage.in_use -= 1

    def release_holder(self, holder: str) -> int:
        """Free every slot a worker held (it died); return how many."""
        freed = 0
        for key, limit in self._limits.items():
            for lease, owner in list(limit.leases.items()):
                if owner == holder:
                    self.release(key, lease)
                    freed += 1
        return freed

    def adjust(self, key: str, delta: float) -> None:
        """Correct a token estimate."""
        tokens = self._limits[key].tokens
        if tokens is not None:
            tokens.adjust(delta)

    def statistics(self) -> dict[str, LimitUsage]:
        """Usage per key."""
        return {key: limit.usage for key, limit in self._limits.items()}


class RaySharedLimits:
    """A client copy's handle on its shared limits (see ``aeval.models.SharedLimits``).

    Args:
        actor: The :class:`LimiterActor`.
        key: The client's key there.
    """

    def __init__(self, actor: Any, key: str) -> None:
        self._actor = actor
        self._key = key
        self._holder: str | None = None

    def _holder_id(self) -> str:
        if self._holder is None:
            import ray

            self._holder = ray.get_runtime_context().get_actor_id() or "driver"
        return self._holder

    async def acquire(self, tokens: float) -> tuple[int, bool]:
        """Wait for a slot and the budgets on the limiter actor."""
        lease, throttled = await self._actor.acquire.remote(self._key, tokens, self._holder_id())
        return int(lease), bool(throttled)

    async def release(self, lease: int) -> None:
        """Give the slot back."""
        await self._actor.release.remote(self._key, lease)

    def adjust(self, delta: float) -> None:
        """Correct the token estimate (without waiting for the answer)."""
        self._actor.adjust.remote(self._key, delta)
