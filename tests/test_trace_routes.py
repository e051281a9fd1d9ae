"""The seam every capture route goes through (aeval/trace/_route.py): one tool call served,
recorded or refused the same way whatever route sees it, and one call seen by two routes
recorded once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

import aeval
from aeval import UnmockedToolCall
from aeval.testing import OpenAICompatibleServer, Reply
from aeval.trace import Fixtures, capture, httpx_event_hooks, record_tool_call, recording
from aeval.trace._context import Recorder
from aeval.trace._route import call_tool, call_tool_async, model_route, record_model

pytestmark = pytest.mark.anyio

FIXTURES = Fixtures({"get_weather": [{"arguments": {"city": "Mysore"}, "result": "sunny"}]})


def test_outside_a_sample_the_live_tool_simply_runs() -> None:
    assert call_tool("get_weather", {"city": "x"}, lambda: "live", route="test") == "live"


def test_a_route_s_call_is_recorded_under_the_name_the_model_called() -> None:
    def fails() -> str:
        raise ConnectionError("down")

    with capture() as trace:
        assert call_tool("get_weather", {"city": "Mysore"}, lambda: "rain", route="t") == "rain"
        with pytest.raises(ConnectionError):
            call_tool("book", {"hotel": "Lalitha"}, fails, route="t")
    weather, book = trace.tool_calls
    assert (weather.name, dict(weather.arguments), weather.result) == (
        "get_weather",
        {"city": "Mysore"},
        "rain",
    )
    assert not weather.mocked
    assert book.error is not None and book.error.type == "ConnectionError"


async def test_under_fixtures_a_route_serves_and_never_runs_the_live_tool() -> None:
    ran: list[str] = []

    async def live() -> str:
        ran.append("live")
        return "live"

    with recording(tools=FIXTURES) as recorder:
        served = await call_tool_async("get_weather", {"city": "Mysore"}, live, route="t")
        with pytest.raises(UnmockedToolCall, match="get_weather"):
            await call_tool_async("get_weather", {"city": "Ooty"}, live, route="t")
    assert (served, ran) == ("sunny", [])
    assert recorder.unmocked is not None and recorder.unmocked.tool == "get_weather"
    calls = recorder.trace().tool_calls
    assert [(c.name, c.mocked, c.result) for c in calls] == [
        ("get_weather", True, "sunny"),
        ("get_weather", True, None),
    ]


def test_a_route_around_an_aeval_tool_function_records_the_call_once() -> None:
    @aeval.tool
    def sync_weather(city: str, unit: str = "C") -> str:
        return f"sunny in {city}"

    with capture() as trace:
        result = call_tool(
            "get_weather", {"city": "Mysore"}, lambda: sync_weather("Mysore"), route="t"
        )
    assert result == "sunny in Mysore"
    assert [(c.name, dict(c.arguments)) for c in trace.tool_calls] == [
        ("get_weather", {"city": "Mysore"})
    ]


def test_under_fixtures_the_outer_route_serves_under_the_model_s_name() -> None:
    @aeval.tool
    def sync_weather(city: str) -> str:
        raise AssertionError("the live tool ran under fixtures")

    with capture(tools=FIXTURES) as trace:
        result = call_tool(
            "get_weather", {"city": "Mysore"}, lambda: sync_weather("Mysore"), route="t"
        )
    assert result == "sunny"
    assert [(c.name, c.mocked) for c in trace.tool_calls] == [("get_weather", True)]


def test_a_helper_the_tool_calls_with_other_arguments_is_its_own_call() -> None:
    @aeval.tool
    def forecast(city: str) -> str:
        return "rain"

    def weather(city: str) -> str:
        return forecast(city.upper()) + forecast(city.upper())

    with capture() as trace:
        call_tool("get_weather", {"city": "Mysore"}, lambda: weather("Mysore"), route="t")
    assert [(c.name, dict(c.arguments)) for c in trace.tool_calls] == [
        ("get_weather", {"city": "Mysore"}),
        ("forecast", {"city": "MYSORE"}),
        ("forecast", {"city": "MYSORE"}),
    ]


def test_two_nested_routes_record_the_call_once_under_the_outer_name() -> None:
    with capture() as trace:
        call_tool(
            "get_weather",
            {"city": "Mysore"},
            lambda: call_tool("weather_impl", {"city": "Mysore"}, lambda: "ok", route="inner"),
            route="outer",
        )
    assert [c.name for c in trace.tool_calls] == ["get_weather"]


async def test_the_httpx_hooks_record_nothing_while_a_model_route_records_the_call() -> None:
    async with (
        OpenAICompatibleServer(default=Reply.calling(("get_weather", {"city": "M"}))) as server,
        httpx.AsyncClient(event_hooks=httpx_event_hooks()) as client,
    ):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        with capture() as trace:
            with model_route("sdk") as records:
                assert records
                with model_route("inner") as inner:
                    assert not inner
                response = await client.post(f"{server.base_url}/chat/completions", json=body)
                record_model(model="m", prompt_tokens=1, requested_tools=["get_weather"])
            await client.post(f"{server.base_url}/chat/completions", json=body)
    assert response.status_code == 200
    first, second = trace.model_calls
    assert (first.model, first.prompt_tokens, first.requested_tools) == ("m", 1, ("get_weather",))
    assert second.requested_tools == ("get_weather",)


def test_a_model_route_outside_a_sample_does_not_record() -> None:
    with model_route("sdk") as records:
        assert not records


# --- after the fact: OpenTelemetry spans ------------------------------------------------------

OTEL_SKIP = "OpenTelemetry is not installed: pip install 'aeval-engine[otel]' opentelemetry-sdk"


@pytest.fixture
def tracer() -> Any:
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason=OTEL_SKIP)
    from aeval.trace.otel import TraceSpanProcessor

    provider = sdk.TracerProvider()
    provider.add_span_processor(TraceSpanProcessor())
    return provider.get_tracer("agent")


def test_a_tool_span_around_an_aeval_tool_function_is_kept_once(tracer: Any) -> None:
    @aeval.tool
    def get_weather(city: str) -> str:
        return "sunny"

    with capture() as trace:
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.set_attribute("gen_ai.tool.name", "get_weather")
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps({"city": "Mysore"}))
            get_weather("Mysore")
        with tracer.start_as_current_span("execute_tool only_a_span") as span:
            span.set_attribute("gen_ai.tool.name", "only_a_span")
    assert [c.name for c in trace.tool_calls] == ["get_weather", "only_a_span"]


def test_a_span_inside_a_route_s_tool_call_is_that_call(tracer: Any) -> None:
    def live() -> str:
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.set_attribute("gen_ai.tool.name", "get_weather")
        return "sunny"

    with capture() as trace:
        call_tool("get_weather", {"city": "Mysore"}, live, route="t")
    assert [c.name for c in trace.tool_calls] == ["get_weather"]


async def test_a_chat_span_around_a_hooked_client_s_call_is_kept_once(tracer: Any) -> None:
    async with (
        OpenAICompatibleServer(default=Reply.calling(("get_weather", {"city": "M"}))) as server,
        httpx.AsyncClient(event_hooks=httpx_event_hooks()) as client,
    ):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        with capture() as trace, tracer.start_as_current_span("chat m") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.request.model", "m")
            await client.post(f"{server.base_url}/chat/completions", json=body)
    (call,) = trace.model_calls
    assert call.requested_tools == ("get_weather",)


def test_a_chat_span_keeps_the_tools_the_model_asked_for(tracer: Any) -> None:
    output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "let me look"},
                {"type": "tool_call", "id": "1", "name": "get_weather", "arguments": {}},
                {"type": "tool_call", "id": "2", "name": "get_attractions", "arguments": {}},
            ],
        }
    ]
    with capture() as trace, tracer.start_as_current_span("chat m") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "m")
        span.set_attribute("gen_ai.output.messages", json.dumps(output))
    (call,) = trace.model_calls
    assert call.requested_tools == ("get_weather", "get_attractions")
    assert call.started is not None and call.started.year > 2000


def test_under_fixtures_a_tool_seen_only_by_a_span_is_an_unmocked_call(tracer: Any) -> None:
    with (
        recording(tools=FIXTURES) as recorder,
        tracer.start_as_current_span("execute_tool book") as span,
    ):
        span.set_attribute("gen_ai.tool.name", "book")
    assert recorder.unmocked is not None
    assert recorder.unmocked.tool == "book"
    assert "OpenTelemetry" in str(recorder.unmocked)


# --- streamed model calls ----------------------------------------------------------------------


async def test_a_streamed_chat_completion_is_recorded_as_an_unstreamed_one() -> None:
    calling = Reply.calling(("get_weather", {"city": "Mysore"}), ("get_attractions", {"n": 3}))
    async with (
        OpenAICompatibleServer([calling, "sunny", calling, "sunny"]) as server,
        httpx.AsyncClient(event_hooks=httpx_event_hooks()) as client,
    ):
        url = f"{server.base_url}/chat/completions"
        body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "a b"}]}
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with capture() as whole:
            for _ in range(2):
                await client.post(url, json=body)
        with capture() as stream:
            for _ in range(2):
                async with client.stream("POST", url, json=streamed) as response:
                    async for _ in response.aiter_lines():
                        pass
    fields = [
        [(c.model, c.prompt_tokens, c.completion_tokens, c.requested_tools) for c in t.model_calls]
        for t in (whole, stream)
    ]
    assert fields[0] == fields[1]
    assert fields[0] == [
        ("m", 2, 0, ("get_weather", "get_attractions")),
        ("m", 2, 1, ()),
    ]
    assert all(c.duration is not None and c.duration > 0 for c in stream.model_calls)


def test_a_sync_client_s_stream_is_recorded_when_read() -> None:
    with (
        OpenAICompatibleServer([Reply.calling(("book", {"hotel": "x"}))]) as server,
        httpx.Client(event_hooks=httpx_event_hooks(sync=True)) as client,
        capture() as trace,
    ):
        body = {"model": "m", "messages": [], "stream": True}
        response = client.post(f"{server.base_url}/chat/completions", json=body)
        assert response.text.endswith("data: [DONE]\n\n")
    (call,) = trace.model_calls
    assert (call.model, call.prompt_tokens, call.requested_tools) == ("m", None, ("book",))


# -- calls issued together: a reply's tool calls in its order ------------------------------
# The tool calls one model reply issued are in the trace in the reply's order, whichever
# started first (aeval/trace/_route.py's "calls issued together"): the model route notes the
# reply's call ids, a tool route that knows a call's id records the call with its place, and
# the recorder puts the reply's calls in that order, in the places they took in start order.
# Calls started with anyio Events, never sleeps.


Call = tuple[str, str | None]
"""A tool call's name and its id in the model's reply (``None``: the route knows none)."""


async def run_reversed(
    recorder: Recorder, calls: list[Call], *, between: str | None = None
) -> None:
    """Start ``calls`` at once, the last first and the first last (each waits for the one
    after it to be running); ``between`` is recorded, with no id, once the last has started."""
    running = [anyio.Event() for _ in calls]

    async def one(index: int, name: str, call_id: str | None) -> None:
        if index + 1 < len(calls):
            await running[index + 1].wait()

        async def live() -> str:
            running[index].set()
            if index + 1 == len(calls) and between is not None:
                record_tool_call(between, {})
            return name

        await call_tool_async(name, {"n": index}, live, route="test", call_id=call_id)

    async with anyio.create_task_group() as group:
        for index, (name, call_id) in enumerate(calls):
            group.start_soon(one, index, name, call_id)


def names(recorder: Recorder) -> list[str]:
    return [call.name for call in recorder.trace().tool_calls]


@pytest.mark.parametrize("redact", [None, lambda value: value], ids=["lazy", "redacted"])
async def test_the_calls_of_one_reply_are_in_its_order_whichever_started_first(
    redact: Callable[[Any], Any] | None,
) -> None:
    with recording(redact=redact) as recorder:
        record_model(model="m", requested_tools=["a", "b", "c"], tool_call_ids=["1", "2", "3"])
        await run_reversed(recorder, [("a", "1"), ("b", "2"), ("c", "3")])
    assert names(recorder) == ["a", "b", "c"]
    a, b, c = recorder.trace().tool_calls
    assert a.started is not None and b.started is not None and c.started is not None
    assert c.started <= b.started <= a.started  # each keeps when it really started


async def test_served_calls_are_in_the_reply_s_order_too() -> None:
    fixtures = Fixtures({name: [{"arguments": {}, "result": name}] for name in ("a", "b")})
    with recording(tools=fixtures) as recorder:
        record_model(model="m", requested_tools=["a", "b"], tool_call_ids=["1", "2"])
        async with anyio.create_task_group() as group:
            served = anyio.Event()

            async def first() -> None:
                await served.wait()
                await call_tool_async("a", {}, _never, route="test", call_id="1")

            async def second() -> None:
                await call_tool_async("b", {}, _never, route="test", call_id="2")
                served.set()

            group.start_soon(first)
            group.start_soon(second)
    assert [(c.name, c.mocked) for c in recorder.trace().tool_calls] == [
        ("a", True),
        ("b", True),
    ]


async def _never() -> str:
    raise AssertionError("a served call never runs")


async def test_calls_without_a_known_reply_keep_their_start_order() -> None:
    with recording() as recorder:
        record_model(model="m", requested_tools=["a", "b"], tool_call_ids=["1", "2"])
        await run_reversed(recorder, [("x", None), ("y", "unknown"), ("z", None)])
    assert names(recorder) == ["z", "y", "x"]


async def test_other_events_keep_their_places_and_replies_are_not_mixed() -> None:
    with recording() as recorder:
        record_model(model="m", requested_tools=["a", "b"], tool_call_ids=["1", "2"])
        await run_reversed(recorder, [("a", "1"), ("b", "2")], between="helper")
        record_model(model="m", requested_tools=["c", "d"], tool_call_ids=["3", "4"])
        await run_reversed(recorder, [("c", "3"), ("d", "4")])
        record_model(model="m", requested_tools=["e", "f"], tool_call_ids=["5", "6"])
        await run_reversed(recorder, [("f", "6"), ("e", "5")])  # the model's order: e, f
    # start order: b, helper (in b), a, d, c, e, f: a and b swap places around the helper
    assert names(recorder) == ["a", "helper", "b", "c", "d", "e", "f"]
    assert len(recorder.trace().model_calls) == 3


async def test_a_reply_with_one_call_or_a_call_id_seen_again_keeps_start_order() -> None:
    with recording() as recorder:
        record_model(model="m", requested_tools=["a"], tool_call_ids=["1"])
        record_model(model="m", requested_tools=["b", "c"], tool_call_ids=["2", "3"])
        await run_reversed(recorder, [("b", "2"), ("c", "3")])
        await run_reversed(recorder, [("b", "2"), ("c", "3")])  # the same ids, no new reply
    assert names(recorder) == ["b", "c", "c", "b"]


def test_a_route_that_calls_tools_itself_places_them_too() -> None:
    with recording() as recorder:
        record_model(model="m", requested_tools=["a", "b"], tool_call_ids=["1", "2"])
        call_tool("b", {}, lambda: "b", route="test", call_id="2")
        call_tool("a", {}, lambda: "a", route="test", call_id="1")
    assert names(recorder) == ["a", "b"]


def test_a_langchain_tool_run_by_hand_is_placed_by_its_tool_call_id() -> None:
    pytest.importorskip("langchain_core", reason="pip install 'aeval-engine[langchain]'")
    from langchain_core.tools import tool

    from aeval.integrations import langchain

    langchain.instrument()
    ran: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city in India."""
        ran.append("get_weather")
        return f"{city}: 24°C"

    @tool
    def find_attractions(city: str) -> str:
        """The top tourist attractions of a city."""
        ran.append("find_attractions")
        return f"{city} palace"

    def call(name: str, call_id: str) -> dict[str, Any]:
        return {"type": "tool_call", "name": name, "args": {"city": "Mysore"}, "id": call_id}

    issued = ["get_weather", "find_attractions"]
    with recording() as recorder:
        record_model(model="m", requested_tools=issued, tool_call_ids=["w", "a"])
        find_attractions.invoke(call("find_attractions", "a"))
        get_weather.invoke(call("get_weather", "w"))
    assert ran == ["find_attractions", "get_weather"]
    assert [c.name for c in recorder.trace().tool_calls] == issued


async def test_a_watched_call_inside_a_sample_keeps_its_reply_order_in_the_sample() -> None:
    """A watched call's recording joins the sample's trace (``online.watch`` inside a run):
    the calls of one reply stay in the reply's order there too."""
    from aeval import EvaluationSample, Scorer
    from aeval.online import OnlineEvaluator
    from aeval.strategies import ToolCalledStrategy

    issued = ["get_weather", "find_attractions"]
    async with OnlineEvaluator(ToolCalledStrategy("get_weather")) as online:

        @online.watch
        async def answer(city: str) -> str:
            record_model(model="m", requested_tools=issued, tool_call_ids=["w", "a"])
            for name, call_id in (("find_attractions", "a"), ("get_weather", "w")):
                await call_tool_async(
                    name, {"city": city}, anyio.lowlevel.checkpoint, route="test", call_id=call_id
                )
            return "done"

        report = await Scorer().evaluate(
            [EvaluationSample("s", ["Mysore"])], answer, ToolCalledStrategy("get_weather")
        )
        await online.join()
    (row,) = report.evaluations
    assert row.trace is not None
    assert [call.name for call in row.trace.tool_calls] == issued
