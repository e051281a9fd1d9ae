"""Cluster-wide model limits: one actor holds every client's slots and budgets."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..models._clock import Clock, check_clock
from ..models._limits import LimitSpec
from ..models._pacing import Grant, Pacer, QuotaHeaders

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
        throttled: Requests that waited for a budget, the provider's quota or a
            ``Retry-After``.
        quota_replies: Replies whose rate-limit headers (``x-ratelimit-*``) reached the
            limiter, to pace every copy.
    """

    name: str
    max_concurrency: int
    granted: int = 0
    in_use: int = 0
    most_in_use: int = 0
    throttled: int = 0
    quota_replies: int = 0


@dataclass(slots=True)
class _Limit:
    spec: LimitSpec
    usage: LimitUsage
    pacer: Pacer
    slots: anyio.CapacityLimiter | None = None
    leases: dict[int, str] = field(default_factory=dict)
    grants: dict[int, Grant] = field(default_factory=dict)


class LimiterActor:
    """Holds the concurrency caps, the request and token budgets and what the provider's
    replies said of its quota, for every shared client.

    The workers' copies of a client call :meth:`acquire` before each request, :meth:`observe`
    with its reply's rate-limit headers (and :meth:`hold` after a 429) and :meth:`release`
    after it; the slots of a worker that died are freed by :meth:`release_holder`. Its waits
    run on ``clock`` (the event loop's by default).

    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = check_clock(clock)
        self._limits: dict[str, _Limit] = {}
        self._leases = itertools.count(1)

    def register(self, specs: Mapping[str, LimitSpec]) -> None:
        """Hold the limits of these clients (by key)."""
        self._limits |= {
            key: _Limit(
                spec,
                LimitUsage(spec.name, spec.max_concurrency),
                Pacer(
                    spec.requests_per_minute,
                    spec.tokens_per_minute,
                    burst=spec.burst,
                    follow_headers=spec.follow_headers,
                    clock=self._clock,
                ),
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
            grant = await limit.pacer.acquire(tokens)
        except BaseException:
            limit.slots.release_on_behalf_of(lease)
            raise
        throttled = grant.waited > 0
        limit.leases[lease] = holder
        limit.grants[lease] = grant
        usage = limit.usage
        usage.granted += 1
        usage.in_use += 1
        usage.most_in_use = max(usage.most_in_use, usage.in_use)
        usage.throttled += throttled
        return lease, throttled

    def release(self, key: str, lease: int) -> None:
        """Give the slot of ``lease`` back (once; a second release is ignored)."""
        limit = self._limits[key]
        grant = limit.grants.pop(lease, None)
        if grant is not None:
            limit.pacer.release(grant)
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
        """Charge ``delta`` more tokens (a request cost more than its estimate)."""
        self._limits[key].pacer.settle(delta)

    def observe(self, key: str, lease: int, quota: QuotaHeaders) -> None:
        """Take in what the reply to the request of ``lease`` said of the provider's quota."""
        limit = self._limits[key]
        grant = limit.grants.get(lease)
        if grant is not None:
            limit.pacer.observe(grant, quota)
            limit.usage.quota_replies += 1

    def hold(self, key: str, seconds: float) -> None:
        """Let no copy of the client send for ``seconds`` (a 429 asked for that wait)."""
        self._limits[key].pacer.hold(seconds)

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
        self._observed: dict[int, Any] = {}  # lease -> its observe call, awaited by release

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
        """Give the slot back, once the actor has taken in what its reply said of the quota
        (a release that overtook that call would drop it: the actor forgets a released
        lease)."""
        observed = self._observed.pop(lease, None)
        if observed is not None:
            await observed
        await self._actor.release.remote(self._key, lease)

    def adjust(self, delta: float) -> None:
        """Charge more tokens (without waiting for the answer)."""
        self._actor.adjust.remote(self._key, delta)

    def observe(self, lease: int, quota: QuotaHeaders) -> None:
        """Pass a reply's rate-limit headers on (without waiting for the answer)."""
        self._observed[lease] = self._actor.observe.remote(self._key, lease, quota)

    def hold(self, seconds: float) -> None:
        """Hold every copy for a 429's wait (without waiting for the answer)."""
        self._actor.hold.remote(self._key, seconds)
