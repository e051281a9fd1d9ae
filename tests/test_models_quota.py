"""The clients pace themselves to the provider's quota: its headers, its waits, its charges."""

from __future__ import annotations

from typing import Any

import pytest

from aeval import ModelHTTPError
from aeval.models import OpenAIChatModel, OpenAIEmbedder, RateLimits, RetryPolicy
from aeval.testing import FakeClock, OpenAICompatibleServer, RecordedRequest, Reply

pytestmark = pytest.mark.anyio


def quota(
    requests: tuple[int, int] | None = None, tokens: tuple[int, int] | None = None
) -> dict[str, str]:
    """``x-ratelimit-*`` headers for ``(limit, remaining)`` of each bucket, reset as a
    provider computes it (the time until the bucket is full again at a minute's refill)."""
    headers: dict[str, str] = {}
    for kind, bucket in (("requests", requests), ("tokens", tokens)):
        if bucket is not None:
            limit, remaining = bucket
            headers[f"x-ratelimit-limit-{kind}"] = str(limit)
            headers[f"x-ratelimit-remaining-{kind}"] = str(remaining)
            headers[f"x-ratelimit-reset-{kind}"] = f"{(limit - remaining) * 60 / limit:g}s"
    return headers


def scripted(clock: FakeClock, *replies: Reply) -> tuple[OpenAICompatibleServer, list[float]]:
    """A server answering ``replies`` in order (then ``"true"``), recording the clock's time at
    each request: the time the client sent it, as a request in flight takes none."""
    arrivals: list[float] = []
    queue = list(replies)

    def handler(request: RecordedRequest) -> Reply | str | None:
        arrivals.append(clock.now())
        return queue.pop(0) if queue else None

    return OpenAICompatibleServer(handler=handler), arrivals


def chat(server: OpenAICompatibleServer, clock: FakeClock, **options: Any) -> OpenAIChatModel:
    options.setdefault("timeout", 5.0)
    return OpenAIChatModel("judge", base_url=server.base_url, clock=clock, **options)


# --- the provider's headers ----------------------------------------------------------------


async def test_the_request_headers_pace_a_client_without_limits() -> None:
    clock = FakeClock()
    # a minute's bucket of 60, empty: one request a second
    server, arrivals = scripted(clock, *[Reply(content="true", headers=quota((60, 0)))] * 4)
    async with server, chat(server, clock) as model:
        for _ in range(4):
            await model.chat("Is it right?")
        stats = model.statistics()
    assert arrivals == pytest.approx([0.0, 1.0, 2.0, 3.0])
    assert (stats.throttled, stats.rate_limited) == (3, 0)
    assert stats.waited == pytest.approx(3.0)
    assert stats.elapsed == pytest.approx(3.0)
    assert stats.requests_per_minute == pytest.approx(80.0)


async def test_the_token_headers_pace_by_the_next_requests_charge() -> None:
    clock = FakeClock()
    server, arrivals = scripted(clock, Reply(content="true", headers=quota(tokens=(6000, 0))))
    async with server, chat(server, clock, max_tokens=40) as model:
        await model.chat("Is it right?")
        await model.chat("Is it right?")
    # the provider refills 100 tokens a second; the next request costs its bytes / 4 plus
    # its max_tokens
    charge = len(server.requests[1].body) // 4 + 40
    assert arrivals == [0.0, pytest.approx(charge / 100)]


async def test_headers_can_be_ignored() -> None:
    clock = FakeClock()
    server, arrivals = scripted(clock, *[Reply(content="true", headers=quota((60, 0)))] * 3)
    limits = RateLimits(follow_headers=False)
    async with server, chat(server, clock, limits=limits) as model:
        for _ in range(3):
            await model.chat("Is it right?")
    assert arrivals == [0.0, 0.0, 0.0]


async def test_the_embedder_follows_the_headers_too() -> None:
    clock = FakeClock()
    async with OpenAICompatibleServer() as server:
        server.enqueue_embeddings(*[Reply(headers=quota((60, 0)))] * 2)
        async with OpenAIEmbedder("embed", base_url=server.base_url, clock=clock) as embedder:
            await embedder.embed(["a cat"])
            await embedder.embed(["a dog"])
    assert clock.sleeps == pytest.approx([1.0])


# --- 429: its wait, its jitter, its deadline -----------------------------------------------


async def test_retry_after_ms_is_read_over_the_rounded_retry_after() -> None:
    clock = FakeClock()
    limited = Reply(
        status=429, content="slow down", headers={"Retry-After": "1", "retry-after-ms": "150"}
    )
    server, arrivals = scripted(clock, limited)
    async with server, chat(server, clock, backoff=0) as model:
        reply = await model.chat("Is it right?")
        stats = model.statistics()
    assert (reply.retries, arrivals) == (1, [0.0, pytest.approx(0.15)])
    assert stats.rate_limited == 1
    assert stats.waited == pytest.approx(0.15)


async def test_retry_after_waits_are_jittered() -> None:
    clock = FakeClock()
    server, _ = scripted(clock, *[Reply.rate_limited(retry_after=1)] * 20)
    limits = RateLimits(follow_headers=False)  # only the retries' own waits
    async with server, chat(server, clock, backoff=0.5, limits=limits) as model:
        assert (await model.chat("Is it right?")).retries == 20
    assert len(clock.sleeps) == 20
    assert all(1.0 <= wait <= 1.5 for wait in clock.sleeps)
    assert len(set(clock.sleeps)) > 1


async def test_a_rate_limited_call_is_retried_until_its_deadline_not_max_attempts() -> None:
    clock = FakeClock()
    server, _ = scripted(clock, *[Reply.rate_limited(retry_after=0)] * 10)
    async with server, chat(server, clock, max_attempts=2) as model:
        reply = await model.chat("Is it right?")
        stats = model.statistics()
    assert (reply.text, reply.retries, stats.rate_limited, stats.failures) == ("true", 10, 10, 0)


async def test_the_deadline_still_ends_a_rate_limited_call() -> None:
    clock = FakeClock()
    server, arrivals = scripted(clock, *[Reply.rate_limited(retry_after=10)] * 100)
    async with server, chat(server, clock, backoff=0, deadline=35) as model:
        with pytest.raises(Exception, match="35 s deadline") as caught:
            await model.chat("Is it right?")
    assert isinstance(caught.value, TimeoutError)
    assert arrivals == [0.0, 10.0, 20.0, 30.0]


async def test_rate_limit_attempts_caps_the_retries_of_a_429() -> None:
    clock = FakeClock()
    server, _ = scripted(clock, *[Reply.rate_limited(retry_after=0)] * 10)
    retry = RetryPolicy(rate_limit_attempts=3, backoff=0)
    async with server, chat(server, clock, retry=retry) as model:
        with pytest.raises(ModelHTTPError, match=r"HTTP 429 .*\(after 3 attempts\)"):
            await model.chat("Is it right?")
    assert len(server.requests) == 3


async def test_a_429_holds_every_call_of_the_client_for_its_wait() -> None:
    clock = FakeClock()
    server, arrivals = scripted(clock, Reply.rate_limited(retry_after=5))
    retry = RetryPolicy(rate_limit_attempts=1)
    async with server, chat(server, clock, retry=retry) as model:
        with pytest.raises(ModelHTTPError):
            await model.chat("the one that was told to wait")
        await model.chat("another call, sent at once")
    assert arrivals == [0.0, 5.0]


# --- configured budgets --------------------------------------------------------------------


async def test_a_configured_budget_holds_a_minutes_burst() -> None:
    clock = FakeClock()
    server, arrivals = scripted(clock)
    async with server, chat(server, clock, requests_per_minute=60) as model:
        for _ in range(62):
            await model.chat("Is it right?")
    assert arrivals == pytest.approx([0.0] * 60 + [1.0, 2.0])


async def test_a_configured_token_budget_charges_the_estimate_not_the_usage() -> None:
    clock = FakeClock()
    server, arrivals = scripted(clock, *[Reply.text("true", usage=(10, 1))] * 3)
    limits = RateLimits(tokens_per_minute=6000, burst=1)  # 100 tokens, 100 a second
    async with server, chat(server, clock, max_tokens=50, limits=limits) as model:
        for _ in range(3):
            await model.chat("Is it right?")
    # the provider charges each request its bytes / 4 plus max_tokens, and keeps it
    charge = len(server.requests[0].body) // 4 + 50
    assert 50 < charge <= 100
    assert arrivals == pytest.approx([0.0, (2 * charge - 100) / 100, (3 * charge - 100) / 100])
