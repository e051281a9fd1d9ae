"""Capture sources beyond @aeval.tool: httpx event hooks, aeval's own chat model client and
OpenTelemetry GenAI spans."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import httpx
import orjson
import pytest

from aeval.models import OpenAIChatModel
from aeval.testing import (
    FakeClock,
    HTTPReply,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    ScriptedHTTPServer,
)
from aeval.trace import (
    CallError,
    ModelCall,
    TraceLimits,
    capture,
    httpx_event_hooks,
    record_model_call,
    recording,
)

pytestmark = pytest.mark.anyio


def completion(model: str = "gpt-test", tools: tuple[str, ...] = ()) -> dict[str, Any]:
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(tools)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "x",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@pytest.fixture
async def chat_server() -> AsyncIterator[ScriptedHTTPServer]:
    def handler(request: RecordedRequest) -> HTTPReply | None:
        if request.path == "/v1/chat/completions":
            body = request.json or {}
            if body.get("model") == "broken":
                return HTTPReply.text('{"choices": [', content_type="application/json")
            if body.get("model") == "failing":
                return HTTPReply.json({"error": {"message": "no"}}, status=500)
            return HTTPReply.json(completion(tools=("get_weather", "get_attractions")))
        if request.path == "/v1/embeddings":
            return HTTPReply.json({"data": [], "usage": {"prompt_tokens": 1}})
        return None

    async with ScriptedHTTPServer(handler=handler) as server:
        yield server


async def test_httpx_hooks_record_a_model_call_per_chat_completion(
    chat_server: ScriptedHTTPServer,
) -> None:
    async with httpx.AsyncClient(
        base_url=chat_server.url, event_hooks=httpx_event_hooks()
    ) as client:
        async with capture() as trace:
            response = await client.post(
                "/v1/chat/completions", json={"model": "asked", "messages": []}
            )
            await client.post("/v1/embeddings", json={"model": "e", "input": ["x"]})
        assert response.json()["model"] == "gpt-test"
    (call,) = trace.model_calls
    assert (call.model, call.prompt_tokens, call.completion_tokens, call.requested_tools) == (
        "gpt-test",
        11,
        7,
        ("get_weather", "get_attractions"),
    )
    assert call.duration is not None and call.duration >= 0
    assert call.started is not None


@pytest.mark.parametrize("route", ["hooks", "record_model_call"])
async def test_a_huge_model_name_and_tool_list_are_bounded_by_the_trace_limits(route: str) -> None:
    huge_name = "m" * 500_000
    tools = (*(f"tool_{i}" for i in range(5_000)), "t" * 9_000)
    limits = TraceLimits(max_text=100, max_items=10)

    def handler(request: RecordedRequest) -> HTTPReply:
        return HTTPReply.json(completion(model=huge_name, tools=tools))

    async with ScriptedHTTPServer(handler=handler) as server:
        with recording(limits=limits) as recorder:
            if route == "hooks":
                async with httpx.AsyncClient(
                    base_url=server.url, event_hooks=httpx_event_hooks()
                ) as client:
                    await client.post("/v1/chat/completions", json={"model": "m"})
            else:
                record_model_call(model=huge_name, requested_tools=tools)
    (call,) = recorder.trace().model_calls
    assert call.model == "m" * 100 + "… [499900 of 500000 characters cut]"
    assert call.requested_tools == (*tools[:10], "… [4991 more tools cut]")
    kept = record_model_call_of(["t" * 9_000], limits)
    assert kept == ("t" * 100 + "… [8900 of 9000 characters cut]",)


def record_model_call_of(tools: list[str], limits: TraceLimits) -> tuple[str, ...]:
    with recording(limits=limits) as recorder:
        record_model_call(model="m", requested_tools=tools)
    return recorder.trace().model_calls[0].requested_tools


async def test_httpx_hooks_never_break_the_call_on_a_malformed_body(
    chat_server: ScriptedHTTPServer,
) -> None:
    async with (
        httpx.AsyncClient(base_url=chat_server.url, event_hooks=httpx_event_hooks()) as client,
        capture() as trace,
    ):
        broken = await client.post("/v1/chat/completions", json={"model": "broken", "messages": []})
        failing = await client.post(
            "/v1/chat/completions", json={"model": "failing", "messages": []}
        )
    assert broken.text == '{"choices": ['
    assert failing.status_code == 500
    assert trace.model_calls == (
        ModelCall(
            "broken", None, None, trace.model_calls[0].duration, (), trace.model_calls[0].started
        ),
    )


async def test_httpx_hooks_outside_a_sample_record_nothing(chat_server: ScriptedHTTPServer) -> None:
    async with httpx.AsyncClient(
        base_url=chat_server.url, event_hooks=httpx_event_hooks()
    ) as client:
        response = await client.post("/v1/chat/completions", json={"model": "m", "messages": []})
        with recording() as recorder:
            pass
    assert response.status_code == 200
    assert recorder.snapshot() is None


async def test_httpx_hooks_keep_concurrent_samples_apart(chat_server: ScriptedHTTPServer) -> None:
    traces: dict[int, Any] = {}
    async with httpx.AsyncClient(
        base_url=chat_server.url, event_hooks=httpx_event_hooks()
    ) as client:

        async def sample(index: int) -> None:
            with recording() as recorder:
                for _ in range(index):
                    await client.post("/v1/chat/completions", json={"model": "m", "messages": []})
            traces[index] = recorder.trace()

        async with anyio.create_task_group() as group:
            for index in range(1, 6):
                group.start_soon(sample, index)
    assert {index: len(trace.model_calls) for index, trace in traces.items()} == {
        1: 1, 2: 2, 3: 3, 4: 4, 5: 5,
    }  # fmt: skip


async def test_openai_chat_model_records_its_calls_inside_a_sample() -> None:
    async with OpenAICompatibleServer() as server:
        server.enqueue(Reply(body=orjson.dumps(completion("served", ("book_ticket",)))))
        server.enqueue(Reply.text("outside"))
        async with OpenAIChatModel(
            base_url=server.base_url, model="asked", api_key="k", clock=FakeClock()
        ) as model:
            with recording() as recorder:
                await model.chat("hello")
            await model.chat("not traced")
    (call,) = recorder.trace().model_calls
    assert (call.model, call.prompt_tokens, call.completion_tokens, call.requested_tools) == (
        "served",
        11,
        7,
        ("book_ticket",),
    )


# --- OpenTelemetry ---------------------------------------------------------------------------


OTEL_SKIP = "OpenTelemetry is not installed: pip install 'aeval-engine[otel]' opentelemetry-sdk"


@pytest.fixture
def tracer() -> Any:
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason=OTEL_SKIP)
    from aeval.trace.otel import TraceSpanProcessor

    provider = sdk.TracerProvider()
    provider.add_span_processor(TraceSpanProcessor())
    return provider.get_tracer("agent")


def test_genai_tool_spans_become_tool_calls(tracer: Any) -> None:
    from opentelemetry.trace import Status, StatusCode

    with capture() as trace:
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", "get_weather")
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps({"city": "Mysore"}))
            span.set_attribute("gen_ai.tool.call.result", json.dumps({"temp": 31}))
        with tracer.start_as_current_span("book") as span:
            span.set_attribute("gen_ai.tool.name", "book")
            span.set_attribute("gen_ai.tool.call.arguments", "not json")
            span.set_attribute("error.type", "TimeoutError")
            span.set_status(Status(StatusCode.ERROR, "too slow"))
        with tracer.start_as_current_span("chat gpt") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.request.model", "gpt")
            span.set_attribute("gen_ai.usage.input_tokens", 5)
            span.set_attribute("gen_ai.usage.output_tokens", 2)
        with tracer.start_as_current_span("unrelated"):
            pass
    weather, book = trace.tool_calls
    assert (weather.name, dict(weather.arguments), weather.result) == (
        "get_weather",
        {"city": "Mysore"},
        {"temp": 31},
    )
    assert weather.started is not None and weather.ended is not None
    assert (book.name, dict(book.arguments), book.error) == (
        "book",
        {"arguments": "not json"},
        CallError("TimeoutError", "too slow"),
    )
    (chat,) = trace.model_calls
    assert (chat.model, chat.prompt_tokens, chat.completion_tokens) == ("gpt", 5, 2)


async def test_a_span_belongs_to_the_sample_where_it_started(tracer: Any) -> None:
    span_ended = anyio.Event()
    spans: list[Any] = []

    async def sample_a() -> None:
        with recording() as recorder:
            spans.append(tracer.start_span("t", attributes={"gen_ai.tool.name": "from_a"}))
            await span_ended.wait()
        traces["a"] = recorder.trace()

    async def sample_b() -> None:
        with recording() as recorder:
            while not spans:
                await anyio.lowlevel.checkpoint()
            spans[0].end()  # ends inside sample b, started in sample a
            span_ended.set()
        traces["b"] = recorder.trace()

    traces: dict[str, Any] = {}
    async with anyio.create_task_group() as group:
        group.start_soon(sample_a)
        group.start_soon(sample_b)
    assert traces["a"].tool_names() == ("from_a",)
    assert traces["b"].tool_names() == ()


def test_spans_outside_a_sample_are_ignored(tracer: Any) -> None:
    with tracer.start_as_current_span("t") as span:
        span.set_attribute("gen_ai.tool.name", "x")
    from aeval.trace.otel import TraceSpanProcessor

    processor = TraceSpanProcessor()
    assert processor.force_flush() is True
    processor.shutdown()


def test_the_processor_without_an_sdk_provider_does_nothing_harmful() -> None:
    pytest.importorskip("opentelemetry.trace", reason=OTEL_SKIP)
    code = (
        "from opentelemetry import trace\n"
        "from aeval.trace.otel import TraceSpanProcessor\n"
        "import aeval\n"
        "processor = TraceSpanProcessor()\n"
        "with aeval.trace.capture() as captured:\n"
        "    with trace.get_tracer('x').start_as_current_span('t') as span:\n"
        "        span.set_attribute('gen_ai.tool.name', 'x')\n"
        "    processor.on_start(span)\n"
        "    processor.on_end(span)\n"
        "print(captured.tool_calls)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "()"


async def test_sync_httpx_hooks_record_from_a_worker_thread(
    chat_server: ScriptedHTTPServer,
) -> None:
    def agent() -> int:
        with httpx.Client(base_url=chat_server.url, event_hooks=httpx_event_hooks(sync=True)) as c:
            return c.post("/v1/chat/completions", json={"model": "m", "messages": []}).status_code

    with recording() as recorder:
        assert await anyio.to_thread.run_sync(agent) == 200
    (call,) = recorder.trace().model_calls
    assert call.requested_tools == ("get_weather", "get_attractions")


def test_without_opentelemetry_the_processor_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "try:\n"
        "    import aeval.trace.otel\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "MissingExtraError aeval.trace.otel maps OpenTelemetry spans, and OpenTelemetry is not "
        "installed: pip install 'aeval-engine[otel]'"
    )
