"""aeval.integrations.openai: a travel agent written with the openai SDK and a hand-written
tool loop, traced with only ``instrument()``, against aeval.testing's server at concurrency 8."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import aeval
from aeval import EvaluationResult, EvaluationSample, Outcome, Scorer
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply
from aeval.trace import ModelCall, Trace, httpx_event_hooks

openai = pytest.importorskip("openai", reason="pip install 'aeval-engine[openai]'")

from aeval.integrations import openai as aeval_openai  # noqa: E402

pytestmark = pytest.mark.anyio

CITIES = ["Mysore", "Ooty", "Delhi", "Goa", "Pune", "Agra", "Kochi", "Shimla"]
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
LIVE: list[str] = []


def model(request: RecordedRequest) -> Reply:
    """Asks for the weather of the user's city, then answers with the tool's result."""
    last = request.messages[-1]
    if last["role"] == "user":
        return Reply.calling(("get_weather", {"city": last["content"]}))
    return Reply.text(f"The weather: {last['content']}")


def sync_weather(city: str) -> str:
    LIVE.append(city)
    return f"sunny in {city}"


def agent(client: Any, *, stream: bool, tools: dict[str, Any] | None = None) -> Any:
    functions = tools or {"get_weather": sync_weather}

    async def complete(messages: list[Any]) -> tuple[str | None, list[Any]]:
        if not stream:
            reply = await client.chat.completions.create(
                model="travel", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            return message.content, list(message.tool_calls or [])
        async with client.chat.completions.stream(
            model="travel",
            messages=messages,
            tools=TOOLS,
            stream_options={"include_usage": True},
        ) as events:
            final = await events.get_final_completion()
        message = final.choices[0].message
        return message.content, list(message.tool_calls or [])

    async def travel_agent(city: str) -> str:
        messages: list[Any] = [{"role": "user", "content": city}]
        while True:
            content, calls = await complete(messages)
            if not calls:
                return content or ""
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.function.name,
                                "arguments": call.function.arguments,
                            },
                        }
                        for call in calls
                    ],
                }
            )
            for call in calls:
                result = functions[call.function.name](**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    return travel_agent


def weather_checked(sample: EvaluationSample, output: object) -> EvaluationResult:
    trace = aeval.trace.current()
    city = sample.parameters[0]
    ok = (
        trace is not None
        and [(c.name, dict(c.arguments)) for c in trace.tool_calls]
        == [("get_weather", {"city": city})]
        and output == f"The weather: sunny in {city}"
    )
    return EvaluationResult.from_boolean(bool(ok))


@pytest.fixture
async def server() -> AsyncIterator[OpenAICompatibleServer]:
    aeval_openai.instrument()
    LIVE.clear()
    async with OpenAICompatibleServer(handler=model) as served:
        yield served


def samples(**metadata: Any) -> list[EvaluationSample]:
    return [EvaluationSample(city, [city], metadata=dict(metadata)) for city in CITIES]


def model_fields(trace: Trace | None) -> list[tuple[Any, ...]]:
    assert trace is not None
    calls: tuple[ModelCall, ...] = trace.model_calls
    return [(c.model, c.prompt_tokens, c.completion_tokens, c.requested_tools) for c in calls]


@pytest.mark.parametrize("stream", [False, True])
async def test_each_sample_s_trace_holds_exactly_its_own_calls_at_concurrency_8(
    server: OpenAICompatibleServer, stream: bool
) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    report = await Scorer(8).evaluate(samples(), agent(client, stream=stream), weather_checked)
    await client.close()
    assert [row.outcome for row in report.evaluations] == [Outcome.PASSED] * 8
    for row in report.evaluations:
        assert row.trace is not None
        assert len(row.trace.model_calls) == 2
        assert row.trace.model_calls[0].requested_tools == ("get_weather",)
        assert all(c.duration is not None for c in row.trace.model_calls)


async def test_a_streamed_run_records_the_same_model_calls_and_tokens(
    server: OpenAICompatibleServer,
) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    whole = await Scorer(8).evaluate(samples(), agent(client, stream=False), weather_checked)
    streamed = await Scorer(8).evaluate(samples(), agent(client, stream=True), weather_checked)
    await client.close()
    for one, other in zip(whole.evaluations, streamed.evaluations, strict=True):
        assert model_fields(one.trace) == model_fields(other.trace)
        assert one.trace is not None and other.trace is not None
        assert one.trace.tokens == other.trace.tokens > 0


async def test_a_client_with_the_httpx_hooks_too_records_each_call_once(
    server: OpenAICompatibleServer,
) -> None:
    http = openai.DefaultAsyncHttpxClient(event_hooks=httpx_event_hooks())
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", http_client=http)
    for stream in (False, True):
        report = await Scorer(8).evaluate(samples(), agent(client, stream=stream), weather_checked)
        assert all(row.passed for row in report.evaluations)
        assert all(
            row.trace is not None and len(row.trace.model_calls) == 2 for row in report.evaluations
        )
    await client.close()


async def test_under_fixtures_a_hand_written_loop_s_live_tool_is_an_error_row(
    server: OpenAICompatibleServer,
) -> None:
    fixtures = {"get_weather": [{"arguments": {}, "result": "served"}]}
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    report = await Scorer(8, tools="fixtures").evaluate(
        samples(tool_fixtures=fixtures), agent(client, stream=False), weather_checked
    )
    await client.close()
    for row in report.evaluations:
        assert row.outcome is Outcome.ERROR
        assert row.error is not None and row.error.type == "UnmockedToolCall"
        assert "get_weather" in row.error.message and "@aeval.tool" in row.error.message


async def test_an_aeval_tool_under_the_model_s_name_is_served_and_recorded_once(
    server: OpenAICompatibleServer,
) -> None:
    served = aeval.tool(name="get_weather")(sync_weather)
    fixtures = {"get_weather": [{"arguments": {}, "result": "sunny in fixture"}]}
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    live = await Scorer(8).evaluate(
        samples(), agent(client, stream=True, tools={"get_weather": served}), weather_checked
    )
    assert sorted(LIVE) == sorted(CITIES)
    LIVE.clear()
    mocked = await Scorer(8, tools="fixtures").evaluate(
        samples(tool_fixtures=fixtures),
        agent(client, stream=True, tools={"get_weather": served}),
        lambda sample, output: EvaluationResult.from_boolean(
            output == "The weather: sunny in fixture"
        ),
    )
    await client.close()
    assert LIVE == []
    assert all(row.passed for row in live.evaluations)
    assert all(row.passed for row in mocked.evaluations)
    for row in mocked.evaluations:
        assert row.trace is not None
        assert [(c.name, c.mocked) for c in row.trace.tool_calls] == [("get_weather", True)]


def test_instrument_is_idempotent_and_the_sync_client_records_too() -> None:
    from openai.resources.chat import completions

    aeval_openai.instrument()
    once = completions.Completions.create
    aeval_openai.instrument()
    assert completions.Completions.create is once
    with OpenAICompatibleServer(handler=model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        with aeval.trace.capture() as trace:
            client.chat.completions.create(
                model="travel", messages=[{"role": "user", "content": "Goa"}], tools=TOOLS
            )
            for _ in client.chat.completions.create(
                model="travel",
                messages=[{"role": "user", "content": "Goa"}],
                stream=True,
                stream_options={"include_usage": True},
            ):
                pass
        client.close()
    assert model_fields(trace.trace) == [
        ("travel", 1, 0, ("get_weather",)),
        ("travel", 1, 0, ("get_weather",)),
    ]


def raw_calls(client: Any) -> list[Any]:
    """The same question asked plainly, as a raw response and as a streamed raw response."""
    ask: dict[str, Any] = {"model": "travel", "messages": [{"role": "user", "content": "Goa"}]}
    ask["tools"] = TOOLS
    usage = {"stream": True, "stream_options": {"include_usage": True}}
    return [
        client.chat.completions.with_raw_response.create(**ask),
        client.chat.completions.with_raw_response.create(**ask, **usage),
    ]


def test_a_raw_response_records_tokens_and_tools_and_parses_as_before() -> None:
    aeval_openai.instrument()
    with OpenAICompatibleServer(handler=model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        with aeval.trace.capture() as trace:
            whole, streamed = raw_calls(client)
            completion = whole.parse()
            chunks = list(streamed.parse())
        client.close()
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert model_fields(trace.trace) == [
        ("travel", 1, 0, ("get_weather",)),
        ("travel", 1, 0, ("get_weather",)),
    ]


async def test_an_async_raw_response_records_what_a_plain_call_records(
    server: OpenAICompatibleServer,
) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    ask: dict[str, Any] = {"model": "travel", "messages": [{"role": "user", "content": "Goa"}]}
    usage = {"stream": True, "stream_options": {"include_usage": True}}
    with aeval.trace.capture() as plain:
        await client.chat.completions.create(**ask, tools=TOOLS)
    with aeval.trace.capture() as raw:
        whole = await client.chat.completions.with_raw_response.create(**ask, tools=TOOLS)
        streamed = await client.chat.completions.with_raw_response.create(
            **ask, tools=TOOLS, **usage
        )
        assert whole.parse().usage is not None
        assert [chunk async for chunk in streamed.parse()][-1].usage is not None
    await client.close()
    assert model_fields(raw.trace) == model_fields(plain.trace) * 2
    assert model_fields(plain.trace) == [("travel", 1, 0, ("get_weather",))]


@pytest.fixture(autouse=True)
def _usage_not_asked() -> Iterator[None]:
    """``stream_usage=True`` is on for the process once given (an example run in this worker
    may have given it): off for each test here unless it asks."""
    aeval_openai._STREAM_USAGE.clear()
    yield
    aeval_openai._STREAM_USAGE.clear()


@pytest.fixture
def stream_usage() -> None:
    aeval_openai.instrument(stream_usage=True)


def ask_streamed(client: Any, **extra: Any) -> list[Any]:
    question: Any = [{"role": "user", "content": "Goa"}]
    return list(
        client.chat.completions.create(model="travel", messages=question, stream=True, **extra)
    )


def test_a_stream_without_usage_records_its_tokens_as_unknown_not_0() -> None:
    aeval_openai.instrument()
    with OpenAICompatibleServer(handler=model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        with aeval.trace.capture() as trace:
            chunks = ask_streamed(client)
        client.close()
        (request,) = server.requests
    assert "stream_options" not in request.json
    assert all(chunk.choices for chunk in chunks)
    assert model_fields(trace.trace) == [("travel", None, None, ("get_weather",))]


def test_stream_usage_asks_for_usage_inside_a_sample_only(stream_usage: None) -> None:
    with OpenAICompatibleServer(handler=model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        with aeval.trace.capture() as trace:
            chunks = ask_streamed(client)
            ask_streamed(client, stream_options={"include_usage": False})
        ask_streamed(client)
        client.close()
        inside, refused, outside = (request.json for request in server.requests)
    assert inside["stream_options"] == {"include_usage": True}
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert refused["stream_options"] == {"include_usage": False}
    assert "stream_options" not in outside
    assert model_fields(trace.trace) == [
        ("travel", 1, 0, ("get_weather",)),
        ("travel", None, None, ("get_weather",)),
    ]


async def test_stream_usage_makes_an_async_stream_record_the_unstreamed_tokens(
    server: OpenAICompatibleServer, stream_usage: None
) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    question: Any = [{"role": "user", "content": "Goa"}]
    with aeval.trace.capture() as trace:
        await client.chat.completions.create(model="travel", messages=question)
        async for _ in await client.chat.completions.create(
            model="travel", messages=question, stream=True
        ):
            pass
    await client.close()
    whole, streamed = model_fields(trace.trace)
    assert whole == streamed == ("travel", 1, 0, ("get_weather",))


def test_stream_usage_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="stream_usage must be True or False, got 'yes'"):
        aeval_openai.instrument(stream_usage="yes")  # type: ignore[arg-type]
