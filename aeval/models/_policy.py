"""How a model client retries and how fast it may call: two frozen values."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RateLimits", "RetryPolicy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When a model client repeats a request, and when it gives up.

    Example:
        >>> RetryPolicy(max_attempts=2, deadline=30.0).max_attempts
        2

    Attributes:
        max_attempts: Requests per call, the first one included; a reply with status 429
            does not count (see ``rate_limit_attempts``).
        deadline: Seconds one call may take in all, retries and waits included, counted from
            when it holds a concurrency slot.
        read_timeout_retries: Retries after a read timeout, within ``max_attempts``.
        backoff: The first retry's wait in seconds (doubled each retry, plus jitter up to it).
            A ``Retry-After`` wait gets the same jitter, so that calls told to wait the same
            time do not come back together.
        max_backoff: The longest wait between two requests, in seconds.
        rate_limit_attempts: Requests per call while the server answers 429, the first one
            included; ``None`` (the default) retries a rate-limited call until its
            ``deadline``: a 429 is the provider saying "later", not an error.

    Raises:
        ValueError: ``max_attempts`` or ``rate_limit_attempts`` is below 1,
            ``read_timeout_retries`` below 0, ``deadline`` not positive or ``backoff``
            negative.
    """

    max_attempts: int = 4
    deadline: float = 180.0
    read_timeout_retries: int = 1
    backoff: float = 0.2
    max_backoff: float = 5.0
    rate_limit_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.rate_limit_attempts is not None and self.rate_limit_attempts < 1:
            raise ValueError(
                f"rate_limit_attempts must be at least 1 or None, got {self.rate_limit_attempts}"
            )
        if self.backoff < 0:
            raise ValueError(f"backoff must be 0 or more, got {self.backoff}")
        if self.read_timeout_retries < 0:
            raise ValueError(
                f"read_timeout_retries must be 0 or more, got {self.read_timeout_retries}"
            )
        if self.deadline <= 0:
            raise ValueError("timeout and deadline must be positive")


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimits:
    """How much a model client may ask of its server at once and per minute.

    Example:
        >>> RateLimits(max_concurrency=4, requests_per_minute=500).tokens_per_minute is None
        True

    Attributes:
        max_concurrency: Calls in progress at once (a call keeps its slot through its
            retries); also the size of the connection pool.
        requests_per_minute: The request budget; ``None`` for none.
        tokens_per_minute: The token budget (a request costs its bytes / 4 plus its
            ``max_tokens``, as providers count); ``None`` for none.
        burst: Seconds' worth of a budget that may be spent at once: 60 (the default) holds a
            minute's worth, as a provider's bucket does; 1 spreads the requests evenly.
        follow_headers: Pace the requests to what the provider's replies say of its quota
            (``x-ratelimit-*`` headers) and hold every request during a 429's
            ``Retry-After``; ``False`` leaves only the budgets and the retries.

    Raises:
        ValueError: ``max_concurrency`` is below 1 or ``burst`` not positive.
    """

    max_concurrency: int = 10
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst: float = 60.0
    follow_headers: bool = True

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {self.max_concurrency}")
        if not self.burst > 0:
            raise ValueError(f"burst must be positive (seconds), got {self.burst}")


_RETRY_KEYS = ("max_attempts", "deadline", "read_timeout_retries", "backoff", "max_backoff")
_LIMIT_KEYS = ("max_concurrency", "requests_per_minute", "tokens_per_minute")


def build_policies(
    retry: RetryPolicy | None,
    limits: RateLimits | None,
    **given: object,
) -> tuple[RetryPolicy, RateLimits]:
    """The values of a client, from ``retry=``/``limits=`` or from the older keyword arguments.

    ``given`` holds the older keyword arguments as the client received them; those that are
    not ``None`` build the values, and may not be mixed with the value they belong to.

    Raises:
        TypeError: ``retry`` (or ``limits``) was given together with one of its fields.
    """
    loose = {key: value for key, value in given.items() if value is not None}
    for value, keys, name in ((retry, _RETRY_KEYS, "retry"), (limits, _LIMIT_KEYS, "limits")):
        mixed = [key for key in keys if key in loose]
        if value is not None and mixed:
            raise TypeError(
                f"give either {name}= or {', '.join(mixed)}=, not both: "
                f"{'RetryPolicy' if name == 'retry' else 'RateLimits'} holds "
                f"{' and '.join(mixed)}"
            )
    if retry is None:
        retry = RetryPolicy(**{k: v for k, v in loose.items() if k in _RETRY_KEYS})  # type: ignore[arg-type]
    if limits is None:
        limits = RateLimits(**{k: v for k, v in loose.items() if k in _LIMIT_KEYS})  # type: ignore[arg-type]
    return retry, limits
