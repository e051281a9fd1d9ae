"""Limits that belong to a model client: request and token budgets, and its statistics."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .._model_types import TokenTotal
from ._pacing import QuotaHeaders

__all__ = ["SHARE_LIMITS", "LimitSpec", "ModelStatistics", "SharedLimits"]


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """A model client's limits, as an executor shares them across its workers.

    Attributes:
        name: The client, for messages (``"OpenAIChatModel('gpt-4o-mini')"``).
        max_concurrency: Requests in flight at once.
        requests_per_minute: The request budget, if any.
        tokens_per_minute: The token budget, if any.
        burst: Seconds of a budget that may be spent at once.
        follow_headers: Whether the provider's rate-limit headers pace the requests.
    """

    name: str
    max_concurrency: int
    requests_per_minute: float | None
    tokens_per_minute: float | None
    burst: float = 60.0
    follow_headers: bool = True


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
        """Charge ``delta`` more tokens: the request cost more than its estimate."""
        ...

    def observe(self, lease: int, quota: QuotaHeaders) -> None:
        """What the reply to the request of ``lease`` said of the provider's buckets."""
        ...

    def hold(self, seconds: float) -> None:
        """Let no copy send for ``seconds`` (the provider answered 429 with a wait)."""
        ...


SHARE_LIMITS: ContextVar[Callable[[LimitSpec, object], SharedLimits] | None] = ContextVar(
    "aeval_share_limits", default=None
)
"""Set by an executor while it serialises strategies: a model client being pickled asks it
for the :class:`SharedLimits` its copies will use (given its spec and itself, so that one
client used by two strategies shares one budget)."""


@dataclass(frozen=True, slots=True)
class ModelStatistics(TokenTotal):
    """A snapshot of what a model client has done (see ``statistics()`` on the clients).

    Attributes:
        requests: HTTP requests sent, retries included.
        retries: Requests that repeated a failed one.
        failures: Calls that raised after their retries.
        in_flight: Requests holding a concurrency slot right now.
        waiting: Calls waiting for a concurrency slot right now.
        max_concurrency: The concurrency cap.
        throttled: Requests that waited for a budget, the provider's quota or a
            ``Retry-After``.
        prompt_tokens: Prompt tokens the server reported.
        completion_tokens: Completion tokens the server reported.
        rate_limited: Replies with status 429 (each was retried, within the deadline).
        waited: Seconds the calls spent waiting for budgets, the provider's quota and
            ``Retry-After``, added up over the calls.
        elapsed: Seconds from the first request sent to the last reply, on the client's
            clock.
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
    rate_limited: int = 0
    waited: float = 0.0
    elapsed: float = 0.0

    @property
    def requests_per_minute(self) -> float:
        """The effective rate: requests answered (not 429) per minute over ``elapsed``."""
        return _per_minute(self.requests - self.rate_limited, self.elapsed)

    @property
    def tokens_per_minute(self) -> float:
        """Tokens reported per minute over ``elapsed``."""
        return _per_minute(self.total_tokens, self.elapsed)


def _per_minute(count: float, seconds: float) -> float:
    return 60.0 * count / seconds if seconds > 0 else 0.0
