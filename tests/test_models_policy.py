"""RetryPolicy and RateLimits: the model clients' retry and limit settings as two values."""

from __future__ import annotations

import dataclasses

import pytest

from aeval import ModelHTTPError
from aeval.models import (
    ChatMessage,
    OpenAIChatModel,
    OpenAIEmbedder,
    RateLimits,
    RetryPolicy,
)
from aeval.testing import FakeClock, OpenAICompatibleServer, Reply

pytestmark = pytest.mark.anyio

USER = [ChatMessage("user", "hi")]


def test_the_older_keyword_arguments_build_the_values() -> None:
    model = OpenAIChatModel(
        "m",
        base_url="http://127.0.0.1:1/v1",
        max_attempts=2,
        deadline=30.0,
        backoff=0.5,
        max_concurrency=3,
        requests_per_minute=60,
    )
    assert model.retry == RetryPolicy(max_attempts=2, deadline=30.0, backoff=0.5)
    assert model.limits == RateLimits(max_concurrency=3, requests_per_minute=60)


def test_the_defaults_are_the_values_defaults() -> None:
    for client in (
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1"),
        OpenAIEmbedder("e", base_url="http://127.0.0.1:1/v1"),
    ):
        assert client.retry == RetryPolicy()
        assert client.limits == RateLimits()


def test_a_value_and_one_of_its_fields_cannot_be_mixed() -> None:
    with pytest.raises(TypeError, match="give either retry= or max_attempts=, not both"):
        OpenAIChatModel("m", retry=RetryPolicy(), max_attempts=2)
    with pytest.raises(TypeError, match="give either limits= or max_concurrency="):
        OpenAIEmbedder("e", limits=RateLimits(), max_concurrency=2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: RetryPolicy(max_attempts=0), "max_attempts must be at least 1, got 0"),
        (lambda: RetryPolicy(read_timeout_retries=-1), "read_timeout_retries must be 0 or more"),
        (lambda: RetryPolicy(deadline=0), "timeout and deadline must be positive"),
        (lambda: RateLimits(max_concurrency=0), "max_concurrency must be at least 1, got 0"),
        (lambda: OpenAIChatModel("m", max_attempts=0), "max_attempts must be at least 1"),
    ],
)
def test_bad_values_are_refused(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]


def test_the_values_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RetryPolicy().max_attempts = 9  # type: ignore[misc]


async def test_a_retry_policy_bounds_the_requests_of_a_call() -> None:
    async with OpenAICompatibleServer() as server:
        server.default = Reply.server_error(502)
        async with OpenAIChatModel(
            "m",
            base_url=server.base_url,
            retry=RetryPolicy(max_attempts=3, backoff=0.01, max_backoff=0.05),
            clock=FakeClock(),
        ) as model:
            with pytest.raises(ModelHTTPError):
                await model.chat(USER)
        assert len(server.requests) == 3
