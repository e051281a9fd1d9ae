from __future__ import annotations

import dataclasses
import email.utils
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from aeval import (
    AevalError,
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)
from aeval.abc import ChatModel, Embedder
from aeval.models import ChatMessage, RateLimits
from aeval.models.openai import OpenAIChatModel, OpenAIEmbedder
from aeval.testing import (
    FakeClock,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    hashed_embedding,
)

pytestmark = pytest.mark.anyio

KEY = "sk-test-SECRET"
ENV_NAMES = (
    "AEVAL_BASE_URL",
    "OPENAI_BASE_URL",
    "AEVAL_MODEL",
    "OPENAI_MODEL",
    "AEVAL_EMBEDDING_MODEL",
    "OPENAI_EMBEDDING_MODEL",
    "AEVAL_API_KEY",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def server() -> AsyncIterator[OpenAICompatibleServer]:
    async with OpenAICompatibleServer() as started:
        yield started


def chat_model(server: OpenAICompatibleServer, **options: Any) -> OpenAIChatModel:
    """A client of ``server`` whose waits are virtual (a FakeClock unless ``clock`` is given)."""
    settings: dict[str, Any] = {
        "backoff": 0.01,
        "max_backoff": 0.05,
        "timeout": 5.0,
        "clock": FakeClock(),
    }
    settings.update(options)
    return OpenAIChatModel("judge-1", base_url=server.base_url, **settings)


def record_arrivals(
    server: OpenAICompatibleServer, clock: FakeClock, *replies: Reply | str
) -> list[float]:
    """The clock's time at each request ``server`` receives; it answers ``replies`` in order.

    The clock stands still while a request is in flight, so this is the time the client
    sent the request at.
    """
    arrivals: list[float] = []
    queue = list(replies)

    def handler(request: RecordedRequest) -> Reply | str | None:
        arrivals.append(clock.now())
        return queue.pop(0) if queue else None

    server.handler = handler
    return arrivals


USER = [ChatMessage("user", "Is Paris the capital of France?")]


# --- configuration -------------------------------------------------------------------------


def test_settings_come_from_arguments_first() -> None:
    model = OpenAIChatModel("m", base_url="http://h:1/v1/", api_key="k")
    assert (model.model, model.base_url) == ("m", "http://h:1/v1")


def test_settings_come_from_aeval_then_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-env/v1")
    monkeypatch.setenv("OPENAI_MODEL", "openai-model")
    assert (OpenAIChatModel().base_url, OpenAIChatModel().model) == (
        "http://openai-env/v1",
        "openai-model",
    )
    monkeypatch.setenv("AEVAL_BASE_URL", "http://aeval-env/v1")
    monkeypatch.setenv("AEVAL_MODEL", "aeval-model")
    assert (OpenAIChatModel().base_url, OpenAIChatModel().model) == (
        "http://aeval-env/v1",
        "aeval-model",
    )


def test_default_base_url_is_openai() -> None:
    assert OpenAIChatModel("m").base_url == "https://api.openai.com/v1"


def test_embedder_reads_the_embedding_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AEVAL_MODEL", "chat-model")
    monkeypatch.setenv("AEVAL_EMBEDDING_MODEL", "embed-model")
    assert OpenAIEmbedder().model == "embed-model"


def test_missing_model_says_how_to_set_it() -> None:
    with pytest.raises(ModelConfigurationError) as caught:
        OpenAIChatModel()
    assert str(caught.value) == (
        "OpenAIChatModel needs a model name: pass model=... or set AEVAL_MODEL or OPENAI_MODEL"
    )
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ModelConfigurationError, match="AEVAL_EMBEDDING_MODEL or OPENAI_EMBEDDING"):
        OpenAIEmbedder()


def test_clients_satisfy_the_protocols() -> None:
    assert isinstance(OpenAIChatModel("m"), ChatModel)
    assert isinstance(OpenAIEmbedder("m"), Embedder)


def test_repr_hides_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = OpenAIChatModel("m", base_url="http://h/v1")
    assert repr(model) == (
        "OpenAIChatModel(model='m', base_url='http://h/v1', api_key='***', max_concurrency=10)"
    )
    assert repr(OpenAIEmbedder("e", api_key=None, base_url="http://h/v1")).endswith(
        "api_key='***', max_concurrency=10)"
    )


def test_repr_without_a_key() -> None:
    assert "api_key=None" in repr(OpenAIChatModel("m"))


def test_model_errors_are_aeval_errors() -> None:
    assert issubclass(ModelHTTPError, ModelError)
    assert issubclass(ModelError, AevalError)
    assert issubclass(ModelTimeoutError, TimeoutError)
    assert issubclass(ModelConnectionError, ConnectionError)
    assert issubclass(ModelResponseError, ValueError)


# --- requests and replies ------------------------------------------------------------------


async def test_chat_sends_the_conversation_and_reads_the_reply(
    server: OpenAICompatibleServer,
) -> None:
    server.enqueue(Reply.text("true", usage=(12, 1)))
    async with chat_model(server, api_key=KEY, max_tokens=5, headers={"X-Team": "qa"}) as model:
        reply = await model.chat(
            [ChatMessage("system", "You judge."), ChatMessage("user", "Is it right?")]
        )
    assert reply.text == "true"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 1)
    assert (reply.model, reply.retries) == ("judge-1", 0)
    assert reply.metadata == {
        "json_mode": False,
        "finish_reason": "stop",
        "id": "chatcmpl-1",
        "max_tokens": 5,
    }
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json == {
        "model": "judge-1",
        "messages": [
            {"role": "system", "content": "You judge."},
            {"role": "user", "content": "Is it right?"},
        ],
        "temperature": 0.0,
        "max_tokens": 5,
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-team"] == "qa"
    assert request.headers["content-type"] == "application/json"


async def test_no_authorization_header_without_a_key(server: OpenAICompatibleServer) -> None:
    async with chat_model(server) as model:
        assert (await model.chat("hi")).text == "true"
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].messages == [{"role": "user", "content": "hi"}]


async def test_json_mode_sends_response_format(server: OpenAICompatibleServer) -> None:
    server.enqueue(Reply.json({"score": 90}))
    async with chat_model(server) as model:
        reply = await model.chat(USER, json_mode=True)
    assert reply.text == '{"score":90}'
    assert reply.metadata["json_mode"] is True
    assert server.requests[0].json["response_format"] == {"type": "json_object"}


async def test_json_mode_falls_back_once_when_the_server_rejects_it(
    server: OpenAICompatibleServer,
) -> None:
    def handler(request: RecordedRequest) -> Reply:
        if "response_format" in request.json:
            return Reply.error(400, "Unrecognized request argument supplied: response_format")
        return Reply.fenced_json({"passed": True})

    server.handler = handler
    async with chat_model(server) as model:
        first = await model.chat(USER, json_mode=True)
        second = await model.chat(USER, json_mode=True)
    assert first.text == second.text == '```json\n{\n  "passed": true\n}\n```'
    assert first.metadata["json_mode"] is False
    assert ["response_format" in r.json for r in server.requests] == [True, False, False]
    assert first.retries == 0


async def test_other_bad_requests_do_not_trigger_the_fallback(
    server: OpenAICompatibleServer,
) -> None:
    server.default = Reply.error(400, "messages must not be empty")
    async with chat_model(server) as model:
        with pytest.raises(ModelHTTPError):
            await model.chat(USER, json_mode=True)
    assert len(server.requests) == 1


async def test_fenced_and_wrapped_content_is_returned_verbatim(
    server: OpenAICompatibleServer,
) -> None:
    server.enqueue(Reply.fenced_json({"score": 4}, prefix="Here it is:\n", suffix="\nDone."))
    async with chat_model(server) as model:
        reply = await model.chat(USER)
    assert reply.text == 'Here it is:\n```json\n{\n  "score": 4\n}\n```\nDone.'


def test_a_model_built_outside_a_loop_works_in_two_loops() -> None:
    with OpenAICompatibleServer(["first", "second"]) as server:
        model = chat_model(server)

        async def ask() -> str:
            async with model:
                return (await model.chat(USER)).text

        assert anyio.run(ask) == "first"
        assert anyio.run(ask) == "second"
        assert model.statistics().requests == 2


def test_a_pool_left_open_by_another_loop_is_replaced() -> None:
    with OpenAICompatibleServer() as server:
        model = chat_model(server)

        async def open_pool() -> object:
            return model._loop_state().client

        async def ask() -> tuple[object, str]:
            async with model:
                text = (await model.chat(USER)).text
                return model._loop_state().client, text

        stale = anyio.run(open_pool)
        fresh, text = anyio.run(ask)
    assert text == "true"
    assert fresh is not stale


async def test_aclose_then_reuse_opens_a_new_pool(server: OpenAICompatibleServer) -> None:
    model = chat_model(server)
    await model.chat(USER)
    await model.aclose()
    await model.aclose()
    assert (await model.chat(USER)).text == "true"
    await model.aclose()
    assert len({r.client_address for r in server.requests}) == 2


async def test_requests_reuse_one_connection(server: OpenAICompatibleServer) -> None:
    async with chat_model(server) as model:
        for _ in range(3):
            await model.chat(USER)
    assert len({r.client_address for r in server.requests}) == 1


# --- retries -------------------------------------------------------------------------------


async def test_retry_after_is_honoured(
    server: OpenAICompatibleServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    arrivals = record_arrivals(server, clock, Reply.rate_limited(retry_after=1), "true")
    caplog.set_level(logging.INFO, logger="aeval.models")
    # backoff=0: no jitter on top of the wait (see test_retry_after_waits_are_jittered)
    async with chat_model(server, clock=clock, backoff=0) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries) == ("true", 1)
    assert arrivals == [0.0, 1.0]
    assert clock.sleeps == [1.0]
    [record] = [r for r in caplog.records if r.name == "aeval.models"]
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        f"chat request to {server.base_url} failed with HTTP 429 (attempt 1; rate limited, "
        "retried until the 180 s deadline); retrying in 1.00 s"
    )


async def test_retry_after_is_capped_at_the_remaining_deadline(
    server: OpenAICompatibleServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    server.default = Reply.rate_limited(retry_after=120)
    caplog.set_level(logging.INFO, logger="aeval.models")
    async with chat_model(server, deadline=30, clock=clock) as model:
        with pytest.raises(ModelTimeoutError) as caught:
            await model.chat(USER)
    assert str(caught.value) == (
        f"chat request to {server.base_url}/chat/completions got no reply within the 30 s "
        f"deadline (1 attempt); raise deadline=... or check that the server at "
        f"{server.base_url} is up"
    )
    [record] = [r for r in caplog.records if r.name == "aeval.models"]
    assert record.args is not None
    assert record.args[-1] == 30.0  # type: ignore[index]
    assert (clock.sleeps, len(server.requests)) == ([30.0], 1)


@pytest.mark.parametrize(
    ("retry_after", "waited"),
    [
        ("7", 7.0),
        ("0.5", 0.5),
        (email.utils.formatdate(1_000_000_000.0, usegmt=True), 0.0),  # a date gone by
    ],
)
async def test_retry_after_accepts_seconds_and_http_dates(
    server: OpenAICompatibleServer, retry_after: str, waited: float
) -> None:
    clock = FakeClock()
    server.enqueue(Reply.rate_limited(retry_after=retry_after), "true")
    async with chat_model(server, clock=clock, backoff=0, deadline=30) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries) == ("true", 1)
    assert clock.sleeps == [waited]


async def test_a_retry_after_date_far_ahead_is_waited_until_the_deadline(
    server: OpenAICompatibleServer,
) -> None:
    clock = FakeClock()
    server.default = Reply.rate_limited(retry_after="Fri, 01 Jan 2100 00:00:00 GMT")
    async with chat_model(server, clock=clock, deadline=30) as model:
        with pytest.raises(ModelTimeoutError):
            await model.chat(USER)
    assert clock.sleeps == [30.0]


@pytest.mark.parametrize("retry_after", [None, "soon"])
async def test_without_a_readable_retry_after_the_backoff_applies(
    server: OpenAICompatibleServer, retry_after: str | None
) -> None:
    clock = FakeClock()
    server.enqueue(Reply.rate_limited(retry_after=retry_after), "true")
    async with chat_model(server, clock=clock, backoff=2) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries) == ("true", 1)
    [slept] = clock.sleeps
    assert slept > 0.0  # the backoff (with its jitter), not a Retry-After


async def test_backoff_doubles_with_jitter_up_to_max_backoff(
    server: OpenAICompatibleServer,
) -> None:
    clock = FakeClock()
    server.enqueue(*[Reply.server_error(503)] * 5, "true")
    async with chat_model(server, backoff=1, max_backoff=4, max_attempts=6, clock=clock) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries) == ("true", 5)
    lowest = [1, 2, 4, 4, 4]
    assert len(clock.sleeps) == 5
    assert all(low <= wait <= low + 1 for low, wait in zip(lowest, clock.sleeps, strict=True))


async def test_server_errors_are_retried(server: OpenAICompatibleServer) -> None:
    server.enqueue(Reply.server_error(500), Reply.server_error(503), "true")
    async with chat_model(server) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries, len(server.requests)) == ("true", 2, 3)


async def test_server_errors_fail_after_max_attempts(server: OpenAICompatibleServer) -> None:
    server.default = Reply.server_error(502)
    async with chat_model(server, max_attempts=3) as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.chat(USER)
    assert caught.value.status == 502
    assert str(caught.value) == (
        f"chat request to {server.base_url}/chat/completions failed with HTTP 502 "
        '(server error): {"error":{"message":"Bad Gateway","type":"error","code":502}} '
        "(after 3 attempts)"
    )
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "bad request: the server rejected the request's parameters"),
        (401, "unauthorized: check the API key (api_key=..., AEVAL_API_KEY or OPENAI_API_KEY)"),
        (403, "forbidden: the API key may not use model 'judge-1'"),
        (
            404,
            "not found: check the base URL '{base}' (it usually ends in /v1) "
            "and the model name 'judge-1'",
        ),
    ],
)
async def test_client_errors_fail_at_once_saying_what_to_fix(
    server: OpenAICompatibleServer, status: int, hint: str
) -> None:
    server.default = Reply.error(status, "nope")
    async with chat_model(server) as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.chat(USER)
    hint = hint.format(base=server.base_url)
    assert str(caught.value) == (
        f"chat request to {server.base_url}/chat/completions failed with HTTP {status} "
        f'({hint}): {{"error":{{"message":"nope","type":"error","code":{status}}}}}'
    )
    assert (caught.value.status, len(server.requests)) == (status, 1)
    assert model.statistics().failures == 1


async def test_dropped_connections_are_retried(server: OpenAICompatibleServer) -> None:
    server.enqueue(Reply.dropped(), Reply.dropped(), "true")
    async with chat_model(server) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries, len(server.requests)) == ("true", 2, 3)


async def test_dropped_connections_fail_after_max_attempts(
    server: OpenAICompatibleServer,
) -> None:
    server.default = Reply.dropped()
    async with chat_model(server, max_attempts=2) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.chat(USER)
    assert str(caught.value) == (
        f"chat request to {server.base_url}/chat/completions failed: RemoteProtocolError: "
        "Server disconnected without sending a response. (after 2 attempts)"
    )
    assert len(server.requests) == 2


async def test_refused_connections_are_retried_then_raised() -> None:
    with OpenAICompatibleServer() as server:
        base_url = server.base_url
    model = OpenAIChatModel("m", base_url=base_url, max_attempts=2, clock=FakeClock())
    with pytest.raises(ModelConnectionError, match=r"ConnectError: .*\(after 2 attempts\)$"):
        await model.chat(USER)
    assert model.statistics().requests == 2


async def test_read_timeouts_are_retried(server: OpenAICompatibleServer) -> None:
    server.enqueue(Reply.slow(30), "true")
    async with chat_model(server, timeout=1.0) as model:
        reply = await model.chat(USER)
    assert (reply.text, reply.retries, len(server.requests)) == ("true", 1, 2)


async def test_read_timeouts_fail_after_max_attempts(server: OpenAICompatibleServer) -> None:
    server.default = Reply.slow(30)
    async with chat_model(server, timeout=0.2, max_attempts=2) as model:
        with pytest.raises(ModelTimeoutError) as caught:
            await model.chat(USER)
    assert str(caught.value) == (
        f"chat request to {server.base_url}/chat/completions timed out (ReadTimeout, "
        "timeout=0.2 s); raise timeout=... for slow models (and set max_tokens so that a "
        "reply cannot run on) (after 2 attempts)"
    )
    assert await anyio.to_thread.run_sync(server.wait_for_requests, 2)
    assert len(server.requests) == 2


async def test_the_deadline_stops_a_slow_server(server: OpenAICompatibleServer) -> None:
    clock = FakeClock()
    server.default = Reply.slow(30)
    errors: list[ModelTimeoutError] = []
    async with chat_model(server, timeout=20, deadline=0.3, max_attempts=10, clock=clock) as model:

        async def call() -> None:
            with pytest.raises(ModelTimeoutError) as caught:
                await model.chat(USER)
            errors.append(caught.value)

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            assert await anyio.to_thread.run_sync(server.wait_for_concurrent, 1)
            clock.advance(0.29)
            await anyio.wait_all_tasks_blocked()
            assert errors == []
            clock.advance(0.01)
    [error] = errors
    assert str(error) == (
        f"chat request to {server.base_url}/chat/completions got no reply within the 0.3 s "
        f"deadline (1 attempt); raise deadline=... or check that the server at "
        f"{server.base_url} is up"
    )
    assert len(server.requests) == 1
    assert model.statistics().failures == 1


async def test_the_deadline_runs_on_the_event_loop_clock_by_default(
    server: OpenAICompatibleServer,
) -> None:
    server.default = Reply.slow(30)
    model = OpenAIChatModel("judge-1", base_url=server.base_url, timeout=20, deadline=1.0)
    async with model:
        with pytest.raises(ModelTimeoutError, match=r"within the 1 s deadline \(1 attempt\)"):
            await model.chat(USER)
    assert await anyio.to_thread.run_sync(server.wait_for_requests, 1)
    assert len(server.requests) == 1


async def test_the_deadline_counts_from_the_first_request_not_the_wait_for_a_slot(
    server: OpenAICompatibleServer,
) -> None:
    """A call queued behind the client's own max_concurrency is not timed out for waiting:
    with one slot and a slow first reply, the calls behind it get their whole deadline."""
    clock = FakeClock()
    release = threading.Event()

    def first_is_slow(request: RecordedRequest) -> Reply:
        if len(server.requests) == 1:
            release.wait(10)
        return Reply.text(f"answer {len(server.requests)}")

    server.handler = first_is_slow
    outcomes: dict[str, str] = {}
    async with chat_model(server, deadline=10, max_concurrency=1, clock=clock) as model:

        async def call(name: str) -> None:
            try:
                outcomes[name] = (await model.chat(USER)).text
            except ModelTimeoutError as error:
                outcomes[name] = f"timeout after {error.retries} retries"

        async with anyio.create_task_group() as group:
            group.start_soon(call, "first")
            assert await anyio.to_thread.run_sync(server.wait_for_concurrent, 1)
            group.start_soon(call, "queued")
            await anyio.wait_all_tasks_blocked()
            clock.advance(15)
            release.set()
    assert outcomes == {"first": "timeout after 0 retries", "queued": "answer 2"}
    assert server.max_concurrent == 1


def test_a_clock_must_be_a_clock() -> None:
    with pytest.raises(TypeError) as caught:
        OpenAIChatModel("m", clock=time.monotonic)  # type: ignore[arg-type]
    assert str(caught.value).startswith(
        "clock must have now(), async sleep(seconds) and move_on_after(seconds), "
        "e.g. aeval.testing.FakeClock(), got <built-in function monotonic>"
    )


async def test_cancellation_propagates(server: OpenAICompatibleServer) -> None:
    server.default = Reply.slow(30)
    async with chat_model(server) as model:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(model.chat, USER)
                await anyio.to_thread.run_sync(server.wait_for_concurrent, 1)
                scope.cancel()
        assert scope.cancelled_caught
        assert model.statistics().in_flight == 0


# --- malformed replies ---------------------------------------------------------------------


async def test_malformed_json_is_not_retried(server: OpenAICompatibleServer) -> None:
    server.default = Reply.malformed(b'{"choices": [{"message": ')
    async with chat_model(server) as model:
        with pytest.raises(ModelResponseError) as caught:
            await model.chat(USER)
    assert str(caught.value) == (
        f'chat reply from {server.base_url}/chat/completions is not valid JSON: {{"choices": '
        '[{"message": '
    )
    assert caught.value.body == '{"choices": [{"message": '
    assert len(server.requests) == 1


async def test_wrong_content_type_is_an_error(server: OpenAICompatibleServer) -> None:
    server.default = Reply.wrong_content_type(b"<html>" + b"x" * 500)
    async with chat_model(server) as model:
        with pytest.raises(ModelResponseError) as caught:
            await model.chat(USER)
    assert str(caught.value).startswith(
        f"chat reply from {server.base_url}/chat/completions has content type 'text/html', "
        f"not JSON (is '{server.base_url}' an OpenAI-compatible API?): <html>xxx"
    )
    assert len(caught.value.body) == 200
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"[1, 2]", "is not a JSON object"),
        (b'{"object": "chat.completion"}', "has no choices"),
        (b'{"choices": []}', "has no choices"),
        (b'{"choices": [{"message": {"content": null}}]}', "has no message content"),
    ],
)
async def test_replies_without_content_are_errors(
    server: OpenAICompatibleServer, body: bytes, what: str
) -> None:
    server.default = Reply(body=body)
    async with chat_model(server) as model:
        with pytest.raises(ModelResponseError) as caught:
            await model.chat(USER)
    assert str(caught.value).startswith(
        f"chat reply from {server.base_url}/chat/completions {what}"
    )


# --- the key is never shown ----------------------------------------------------------------


async def test_the_key_never_appears_in_errors_logs_or_reprs(
    server: OpenAICompatibleServer, caplog: pytest.LogCaptureFixture
) -> None:
    def echo_key(request: RecordedRequest) -> Reply:
        sent = request.headers.get("authorization", "")
        return Reply.error(401, f"invalid key {sent}")

    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    async with chat_model(server, api_key=KEY, max_attempts=2, timeout=1.0) as model:
        for reply in (
            echo_key,
            lambda _: Reply.server_error(),
            lambda _: Reply.dropped(),
            lambda _: Reply.slow(30),
            lambda _: Reply.wrong_content_type(f"<p>{KEY}</p>".encode()),
            lambda _: Reply.malformed(f'{{"key": "{KEY}"'.encode()),
            lambda _: Reply(body=f'{{"echo": "{KEY}"}}'.encode()),
            lambda _: Reply.wrong_content_type(("x" * 195 + KEY).encode()),
            lambda _: Reply(status=400, body=("y" * 193 + KEY).encode()),
        ):
            server.handler = reply
            with pytest.raises(ModelError) as caught:
                await model.chat(USER)
            errors.append(caught.value)
        shown = [repr(model), str(model.statistics())]
    assert [type(e).__name__ for e in errors] == [
        "ModelHTTPError",
        "ModelHTTPError",
        "ModelConnectionError",
        "ModelTimeoutError",
        "ModelResponseError",
        "ModelResponseError",
        "ModelResponseError",
        "ModelResponseError",
        "ModelHTTPError",
    ]
    assert "invalid key Bearer ***" in str(errors[0])
    assert str(errors[-2]).endswith(": " + "x" * 195 + "***")
    for error in errors:
        shown += [str(error), repr(error), *map(str, vars(error).values())]
    shown += [record.getMessage() for record in caplog.records]
    assert all(request.headers["authorization"] == f"Bearer {KEY}" for request in server.requests)
    assert [text for text in shown if "SECRET" in text or "sk-te" in text] == []
    assert any(record.name == "aeval.models" for record in caplog.records)


# --- limits and statistics -----------------------------------------------------------------


async def test_concurrency_cap_is_respected(server: OpenAICompatibleServer) -> None:
    released = threading.Event()

    def hold(request: RecordedRequest) -> str:
        released.wait(10)
        return "true"

    server.handler = hold
    texts: list[str] = []
    async with chat_model(server, max_concurrency=3) as model:

        async def ask() -> None:
            texts.append((await model.chat(USER)).text)

        async with anyio.create_task_group() as group:
            for _ in range(9):
                group.start_soon(ask)
            assert await anyio.to_thread.run_sync(server.wait_for_concurrent, 3)
            stats = model.statistics()
            assert (stats.in_flight, stats.waiting, server.in_flight) == (3, 6, 3)
            released.set()
        assert model.statistics().in_flight == 0
    assert texts == ["true"] * 9
    assert server.max_concurrent == 3


async def test_requests_per_minute_budget_delays_requests(
    server: OpenAICompatibleServer,
) -> None:
    clock = FakeClock()
    arrivals = record_arrivals(server, clock)
    # burst=1: the bucket holds a second's worth (the default, a minute's, is in
    # tests/test_models_quota.py)
    limits = RateLimits(requests_per_minute=600, burst=1)
    async with chat_model(server, limits=limits, clock=clock) as model:
        for _ in range(14):
            await model.chat(USER)
        stats = model.statistics()
    assert (stats.requests, stats.throttled) == (14, 4)
    # a second's worth (10) at once, then one every tenth of a second
    assert arrivals == pytest.approx([0.0] * 10 + [0.1, 0.2, 0.3, 0.4])
    assert clock.sleeps == pytest.approx([0.1] * 4)


async def test_tokens_per_minute_budget_is_corrected_by_reported_usage(
    server: OpenAICompatibleServer,
) -> None:
    clock = FakeClock()
    arrivals = record_arrivals(
        server, clock, Reply.text("a", usage=(150, 0)), Reply.text("b", usage=(1, 0))
    )
    limits = RateLimits(tokens_per_minute=6000, burst=1)
    async with chat_model(server, limits=limits, clock=clock) as model:
        first = await model.chat("hi")
        second = await model.chat("hi")
        stats = model.statistics()
    assert (first.text, second.text) == ("a", "b")
    assert stats.throttled == 1
    assert (stats.prompt_tokens, stats.total_tokens) == (151, 151)
    # the request's bytes / 4 estimated, 150 used: the bucket (100) is 50 in debt and
    # refills 100 a second, so the next estimate comes (estimate + 50) / 100 s later
    estimate = len(server.requests[0].body) // 4
    assert estimate < 100
    assert arrivals == [0.0, pytest.approx((estimate + 50) / 100)]


def test_budgets_must_be_positive() -> None:
    with pytest.raises(ValueError, match="a per-minute budget must be positive, got -1"):
        OpenAIChatModel("m", requests_per_minute=-1)


async def test_statistics_count_requests_retries_failures_and_tokens(
    server: OpenAICompatibleServer,
) -> None:
    server.enqueue(
        Reply.server_error(),
        Reply.text("true", usage=(10, 2)),
        Reply.error(404),
        Reply.text("false", usage=(5, 1)),
    )
    clock = FakeClock()
    async with chat_model(server, max_concurrency=4, clock=clock) as model:
        assert dataclasses.asdict(model.statistics()) == {
            "requests": 0,
            "retries": 0,
            "failures": 0,
            "in_flight": 0,
            "waiting": 0,
            "max_concurrency": 4,
            "throttled": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "rate_limited": 0,
            "waited": 0.0,
            "elapsed": 0.0,
        }
        await model.chat(USER)
        with pytest.raises(ModelHTTPError):
            await model.chat(USER)
        await model.chat(USER)
        stats = model.statistics()
    assert dataclasses.asdict(stats) == {
        "requests": 4,
        "retries": 1,
        "failures": 1,
        "in_flight": 0,
        "waiting": 0,
        "max_concurrency": 4,
        "throttled": 0,
        "prompt_tokens": 15,
        "completion_tokens": 3,
        "rate_limited": 0,
        "waited": 0.0,
        "elapsed": sum(clock.sleeps),  # the backoff after the 5xx: nothing else takes time
    }
    assert stats.total_tokens == 18


# --- embeddings ----------------------------------------------------------------------------


@pytest.fixture
def embedder_factory(server: OpenAICompatibleServer) -> Iterator[Any]:
    def make(**options: Any) -> OpenAIEmbedder:
        settings: dict[str, Any] = {"backoff": 0.01, "timeout": 5.0, "clock": FakeClock()}
        settings.update(options)
        return OpenAIEmbedder("embed-1", base_url=server.base_url, **settings)

    yield make


async def test_embed_returns_one_vector_per_text_in_order(
    server: OpenAICompatibleServer, embedder_factory: Any
) -> None:
    texts = ["a cat", "a dog", "a cat", "the sun", "rain"]
    async with embedder_factory(batch_size=2) as embedder:
        result = await embedder.embed(texts)
    assert result.vectors == [hashed_embedding(text) for text in texts]
    assert result.vectors[0] == result.vectors[2] != result.vectors[1]
    assert (result.model, result.retries) == ("embed-1", 0)
    assert result.usage.prompt_tokens == 9
    assert sorted(tuple(r.json["input"]) for r in server.requests) == [
        ("a cat", "a dog"),
        ("a cat", "the sun"),
        ("rain",),
    ]
    assert {r.json["model"] for r in server.requests} == {"embed-1"}


async def test_embed_reorders_by_index_and_counts_retries(
    server: OpenAICompatibleServer, embedder_factory: Any
) -> None:
    body = b'{"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1.5, 0]}]}'
    server.enqueue_embeddings(Reply.rate_limited(0), Reply(body=body))
    async with embedder_factory(dimensions=2) as embedder:
        result = await embedder.embed(["x", "y"])
    assert result.vectors == [[1.5, 0.0], [0.0, 1.0]]
    assert result.retries == 1
    assert server.requests[0].json == {"model": "embed-1", "input": ["x", "y"], "dimensions": 2}


async def test_embed_of_nothing_sends_nothing(
    server: OpenAICompatibleServer, embedder_factory: Any
) -> None:
    async with embedder_factory() as embedder:
        result = await embedder.embed([])
    assert (result.vectors, server.requests) == ([], [])


async def test_embed_rejects_a_count_mismatch(
    server: OpenAICompatibleServer, embedder_factory: Any
) -> None:
    server.enqueue_embeddings(Reply.embeddings([[1.0, 0.0]]))
    async with embedder_factory() as embedder:
        with pytest.raises(ModelResponseError) as caught:
            await embedder.embed(["one", "two"])
    assert str(caught.value).startswith(
        f"embeddings reply from {server.base_url}/embeddings has 1 embeddings in 'data' "
        "for 2 texts: "
    )


async def test_embed_rejects_vectors_that_are_not_numbers(
    server: OpenAICompatibleServer, embedder_factory: Any
) -> None:
    server.enqueue_embeddings(Reply(body=b'{"data": [{"index": 0, "embedding": "abc"}]}'))
    async with embedder_factory() as embedder:
        with pytest.raises(ModelResponseError, match="has an embedding that is not a list"):
            await embedder.embed(["one"])


async def test_embed_fails_at_once_on_unauthorized(
    server: OpenAICompatibleServer, embedder_factory: Any
) -> None:
    server.enqueue_embeddings(Reply.error(401, "bad key"))
    async with embedder_factory(api_key=KEY) as embedder:
        with pytest.raises(ModelHTTPError) as caught:
            await embedder.embed(["one"])
    assert caught.value.status == 401
    assert "embeddings request to" in str(caught.value)
    assert len(server.requests) == 1
