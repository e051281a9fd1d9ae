"""Pacing a model client to its provider's quota: the budgets it was given, and what the
provider's rate-limit headers say of the buckets it enforces."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from ._clock import Clock

__all__ = [
    "Grant",
    "Pacer",
    "Quota",
    "QuotaHeaders",
    "parse_duration",
    "read_quota_headers",
]

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_KINDS = ("requests", "tokens")


def parse_duration(text: str | None) -> float | None:
    """Seconds in a reset header: ``"20ms"``, ``"1.5s"``, ``"6m0s"``, ``"1h2m3s"`` or ``"7"``.

    Returns ``None`` for anything else.

    Example:
        >>> parse_duration("6m0s"), parse_duration("20ms"), parse_duration("soon")
        (360.0, 0.02, None)
    """
    if text is None:
        return None
    text = text.strip().lower()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


@dataclass(frozen=True, slots=True)
class Quota:
    """One of the provider's buckets as a reply's headers describe it.

    Attributes:
        limit: The bucket's size (``x-ratelimit-limit-*``): a minute's worth.
        remaining: What is left (``x-ratelimit-remaining-*``) once the request was admitted.
        reset: Seconds until the bucket is full again (``x-ratelimit-reset-*``), if sent.
    """

    limit: float
    remaining: float
    reset: float | None

    @property
    def rate(self) -> float:
        """The refill per second: a minute's worth per minute, slower if the reset says so."""
        rate = self.limit / 60.0
        if self.reset and self.remaining < self.limit:
            rate = min(rate, (self.limit - self.remaining) / self.reset)
        return rate


@dataclass(frozen=True, slots=True)
class QuotaHeaders:
    """The quota a reply's ``x-ratelimit-*`` headers report, per bucket (``None``: not sent)."""

    requests: Quota | None
    tokens: Quota | None

    def __bool__(self) -> bool:
        return self.requests is not None or self.tokens is not None


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if number >= 0 else None


def read_quota_headers(headers: Mapping[str, str]) -> QuotaHeaders:
    """The ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers of a reply.

    A bucket counts only with both its limit (positive) and its remaining count.

    Example:
        >>> read_quota_headers({"x-ratelimit-limit-requests": "600",
        ...     "x-ratelimit-remaining-requests": "599", "x-ratelimit-reset-requests": "100ms"})
        QuotaHeaders(requests=Quota(limit=600.0, remaining=599.0, reset=0.1), tokens=None)
    """
    found: dict[str, Quota | None] = {}
    for kind in _KINDS:
        limit = _number(headers.get(f"x-ratelimit-limit-{kind}"))
        remaining = _number(headers.get(f"x-ratelimit-remaining-{kind}"))
        found[kind] = (
            Quota(limit, remaining, parse_duration(headers.get(f"x-ratelimit-reset-{kind}")))
            if limit and remaining is not None
            else None
        )
    return QuotaHeaders(found["requests"], found["tokens"])


class _Bucket:
    """A continuously refilling bucket; unknown (never waits) until it has a size."""

    __slots__ = ("capacity", "level", "rate", "updated")

    def __init__(self, per_minute: float | None = None, *, burst: float = 60.0) -> None:
        self.capacity = 0.0
        self.rate = 0.0
        self.level = 0.0
        self.updated: float | None = None
        if per_minute is not None:
            self.rate = per_minute / 60.0
            self.capacity = max(1.0, self.rate * burst)
            self.level = self.capacity

    @property
    def known(self) -> bool:
        return self.rate > 0

    def refill(self, now: float) -> None:
        if self.updated is not None and now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now if self.updated is None else max(now, self.updated)

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is there (a request larger than the bucket waits for a
        full bucket and leaves it in debt, so the average rate holds)."""
        if not self.known:
            return 0.0
        needed = min(amount, self.capacity)
        return 0.0 if self.level >= needed else (needed - self.level) / self.rate


class _ServerBucket(_Bucket):
    """The provider's bucket as this client sees it: the latest reply's headers, minus the
    requests still in flight, refilled since.

    A request in flight may have been counted in the reply already (a provider that counts
    a request when it arrives) or not (one that counts it when it answers): counting it
    again can only make the level lower than the provider's, and the next reply corrects
    it. The reply's time stands for the time the provider counted, for the same reason.
    """

    __slots__ = ("in_flight",)

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0.0

    def observe(self, quota: Quota, own: float, now: float) -> None:
        self.capacity = quota.limit
        self.rate = max(quota.rate, quota.limit / 86_400.0)
        self.level = min(quota.limit, quota.remaining) - (self.in_flight - own)
        self.updated = now


@dataclass(frozen=True, slots=True)
class Grant:
    """What :meth:`Pacer.acquire` let through: one request, until :meth:`Pacer.release`.

    Attributes:
        key: The request, among those in flight.
        tokens: Its tokens.
        waited: Seconds it waited for the budgets, the provider's buckets or a
            ``Retry-After``.
    """

    key: int
    tokens: float
    waited: float


class Pacer:
    """When a client's next request may go: its configured budgets, the provider's buckets
    learned from the replies' headers, and the ``Retry-After`` of a 429, all in one wait.

    Requests wait in turn (first come, first served) for every bucket at once; then each
    bucket is charged (one request, ``tokens`` tokens). The lock is created on first use,
    inside the event loop.

    Args:
        requests_per_minute: The configured request budget, if any.
        tokens_per_minute: The configured token budget, if any.
        burst: Seconds of a configured budget that may be spent at once (60: a provider's
            bucket holds a minute's worth).
        follow_headers: Read the provider's ``x-ratelimit-*`` headers and keep within them.
        clock: What waits run on.
    """

    __slots__ = (
        "_budgets",
        "_burst",
        "_clock",
        "_follow",
        "_hold_until",
        "_in_flight",
        "_keys",
        "_lock",
        "_per_minute",
        "_server",
    )

    def __init__(
        self,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        *,
        burst: float,
        follow_headers: bool,
        clock: Clock,
    ) -> None:
        for budget in (requests_per_minute, tokens_per_minute):
            if budget is not None and budget <= 0:
                raise ValueError(f"a per-minute budget must be positive, got {budget}")
        self._per_minute = (requests_per_minute, tokens_per_minute)
        self._burst = burst
        self._follow = follow_headers
        self._clock = clock
        self._lock: anyio.Lock | None = None
        self.reset()

    def reset(self) -> None:
        """Start over with full budgets (a new event loop, or a copy on a worker)."""
        self._budgets = tuple(_Bucket(rate, burst=self._burst) for rate in self._per_minute)
        self._server = (_ServerBucket(), _ServerBucket())
        self._hold_until = float("-inf")
        self._in_flight: dict[int, float] = {}
        self._keys = 0
        self._lock = None

    @property
    def active(self) -> bool:
        """Whether anything could make a request wait."""
        return self._follow or any(budget.known for budget in self._budgets)

    async def acquire(self, tokens: float) -> Grant:
        """Wait until one request of ``tokens`` tokens fits every bucket, then charge it."""
        clock = self._clock
        if self._lock is None:
            self._lock = anyio.Lock()
        elif not self._lock.locked() and self._wait(tokens) <= 0:
            return self._take(tokens, 0.0)  # nobody waiting and room: no lock to go through
        async with self._lock:
            start = clock.now()
            while (wait := self._wait(tokens)) > 0:
                await clock.sleep(wait)
            return self._take(tokens, clock.now() - start)

    def _wait(self, tokens: float) -> float:
        now = self._clock.now()
        wait = self._hold_until - now
        for buckets in (self._budgets, self._server):
            for bucket, amount in zip(buckets, (1.0, tokens), strict=True):
                bucket.refill(now)
                wait = max(wait, bucket.wait_for(amount))
        return wait

    def _take(self, tokens: float, waited: float) -> Grant:
        for index, amount in enumerate((1.0, tokens)):
            self._budgets[index].level -= amount
            server = self._server[index]
            server.level -= amount
            server.in_flight += amount
        self._keys += 1
        self._in_flight[self._keys] = tokens
        return Grant(self._keys, tokens, waited)

    def observe(self, grant: Grant, quota: QuotaHeaders) -> None:
        """Take in what the reply to the request of ``grant`` said of the provider's buckets."""
        if not self._follow or grant.key not in self._in_flight:
            return
        now = self._clock.now()
        for server, found, own in zip(
            self._server, (quota.requests, quota.tokens), (1.0, grant.tokens), strict=True
        ):
            if found is not None:
                server.observe(found, own, now)

    def release(self, grant: Grant) -> None:
        """The request of ``grant`` is over (answered, failed or cancelled)."""
        tokens = self._in_flight.pop(grant.key, None)
        if tokens is not None:
            for server, amount in zip(self._server, (1.0, tokens), strict=True):
                server.in_flight -= amount

    def hold(self, seconds: float) -> None:
        """Let no request go for ``seconds`` (the provider answered 429 with a wait)."""
        if self._follow:
            self._hold_until = max(self._hold_until, self._clock.now() + seconds)

    def settle(self, tokens: float) -> None:
        """Charge ``tokens`` more to the token budgets (the request cost more than estimated)."""
        self._budgets[1].level -= tokens
        self._server[1].level -= tokens
