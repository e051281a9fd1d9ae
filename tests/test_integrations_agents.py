"""The OpenAI Agents SDK, pydantic-ai and LangChain/LangGraph, traced, mocked and replayed
with only their ``instrument()`` (issue 35).

Each framework's travel agent is written as its docs write one, its model the scripted
``travel_model`` on ``aeval.testing``'s OpenAI-compatible server on 127.0.0.1, its tools
live functions that count their calls (``book_ticket`` is ``reserve_seat`` renamed the
framework's way).
"""

from __future__ import annotations

import contextlib
import runpy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import aeval
from aeval import EvaluationReport, Samples, Scorer
from aeval.integrations import (
    langchain as lc_integration,
    openai as openai_integration,
    openai_agents as agents_integration,
    pydantic_ai as pai_integration,
)
from aeval.strategies import (
    ContainsStrategy,
    ToolCalledStrategy,
    ToolCallsStrategy,
    ToolPolicyStrategy,
    ToolSequenceStrategy,
)
from aeval.testing import OpenAICompatibleServer
from aeval.trace import Replay, Trace
from examples.travel_agent import MODEL, SYSTEM, travel_model

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

Chat = Callable[[str], Awaitable[str]]
Built = tuple[Chat, Callable[[], Awaitable[None]]]
LIVE: list[tuple[str, dict[str, Any]]] = []
HELPER: list[str] = []


def _weather(city: str) -> str:
    LIVE.append(("get_weather", {"city": city}))
    return f"{city}: 24°C, clear skies (live)"


def _attractions(city: str) -> str:
    LIVE.append(("find_attractions", {"city": city}))
    return f"Top attractions of {city}: its palace (live)"


def _price(origin: str, destination: str) -> str:
    LIVE.append(("get_ticket_price", {"origin": origin, "destination": destination}))
    return "Cheapest: KSRTC bus ₹180 (live)"


def _book(origin: str, destination: str) -> str:
    LIVE.append(("book_ticket", {"origin": origin, "destination": destination}))
    return "ticket KSRTC-1042 (live)"


@aeval.tool
def decorated_weather(city: str) -> str:
    """``@aeval.tool`` under a framework's own tool: the call must be recorded once."""
    return _weather(city)


# --- the agents, as each framework's docs write them -----------------------------------------


def openai_agents_chat(base_url: str, *, stream: bool) -> Built:
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    @function_tool
    async def get_weather(city: str) -> str:
        """The current weather in a city in India."""
        return decorated_weather(city)

    @function_tool
    async def find_attractions(city: str) -> str:
        """The top tourist attractions of a city."""
        return _attractions(city)

    @function_tool
    def get_ticket_price(origin: str, destination: str) -> str:
        """The cheapest ticket between two cities."""
        return _price(origin, destination)

    async def reserve_seat(origin: str, destination: str) -> str:
        """Book the cheapest ticket between two cities."""
        return _book(origin, destination)

    client = AsyncOpenAI(base_url=base_url, api_key="local")
    agent = Agent(
        name="Travel planner",
        instructions=SYSTEM,
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        model_settings=ModelSettings(include_usage=True),  # a stream's tokens, when streamed
        tools=[
            get_weather,
            find_attractions,
            get_ticket_price,
            function_tool(reserve_seat, name_override="book_ticket"),
        ],
    )

    async def chat(question: str) -> str:
        if stream:
            result = Runner.run_streamed(agent, question)
            async for _ in result.stream_events():
                pass
            return str(result.final_output)
        return str((await Runner.run(agent, question)).final_output)

    return chat, client.close


def pydantic_ai_chat(base_url: str, *, stream: bool) -> Built:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(base_url=base_url, api_key="local")
    provider = OpenAIProvider(openai_client=client)
    agent = Agent(OpenAIChatModel(MODEL, provider=provider), instructions=SYSTEM)

    @agent.tool_plain
    async def get_weather(city: str) -> str:
        """The current weather in a city in India."""
        return decorated_weather(city)

    @agent.tool_plain
    async def find_attractions(city: str) -> str:
        """The top tourist attractions of a city."""
        return _attractions(city)

    @agent.tool_plain
    def get_ticket_price(origin: str, destination: str) -> str:
        """The cheapest ticket between two cities."""
        return _price(origin, destination)

    @agent.tool_plain(name="book_ticket")
    async def reserve_seat(origin: str, destination: str) -> str:
        """Book the cheapest ticket between two cities."""
        return _book(origin, destination)

    async def chat(question: str) -> str:
        if stream:
            async with agent.run_stream(question) as result:
                return await result.get_output()
        return (await agent.run(question)).output

    return chat, client.close


def langchain_chat(base_url: str, *, stream: bool) -> Built:
    import httpx
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    @tool
    async def get_weather(city: str) -> str:
        """The current weather in a city in India."""
        return decorated_weather(city)

    @tool
    async def find_attractions(city: str) -> str:
        """The top tourist attractions of a city."""
        return _attractions(city)

    @tool
    def get_ticket_price(origin: str, destination: str) -> str:
        """The cheapest ticket between two cities."""
        return _price(origin, destination)

    @tool("book_ticket")
    async def reserve_seat(origin: str, destination: str) -> str:
        """Book the cheapest ticket between two cities."""
        return _book(origin, destination)

    http = httpx.AsyncClient()
    model = ChatOpenAI(
        model=MODEL,
        base_url=base_url,
        api_key=SecretStr("local"),
        streaming=stream,
        stream_usage=True,  # a stream's tokens, when streamed
        http_async_client=http,
    )
    agent = create_agent(
        model,
        tools=[get_weather, find_attractions, get_ticket_price, reserve_seat],
        system_prompt=SYSTEM,
    )

    async def chat(question: str) -> str:
        state = await agent.ainvoke({"messages": [{"role": "user", "content": question}]})
        return str(state["messages"][-1].content)

    return chat, http.aclose


@dataclass(frozen=True, slots=True)
class Framework:
    name: str
    instrument: Callable[[], None]
    build: Callable[..., Built]

    @contextlib.asynccontextmanager
    async def chat(self, base_url: str, *, stream: bool = False) -> AsyncIterator[Chat]:
        chat, close = self.build(base_url, stream=stream)
        try:
            yield chat
        finally:
            await close()


FRAMEWORKS = [
    Framework("openai_agents", agents_integration.instrument, openai_agents_chat),
    Framework("pydantic_ai", pai_integration.instrument, pydantic_ai_chat),
    Framework("langchain", lc_integration.instrument, langchain_chat),
]


@pytest.fixture(params=FRAMEWORKS, ids=[f.name for f in FRAMEWORKS])
def framework(request: pytest.FixtureRequest) -> Framework:
    chosen: Framework = request.param
    chosen.instrument()
    chosen.instrument()  # idempotent
    return chosen


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(handler=travel_model, model=MODEL) as running:
        yield running


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    LIVE.clear()
    yield
    LIVE.clear()


# --- the samples ------------------------------------------------------------------------------

TOOL_CHECKS = (
    ContainsStrategy(case_sensitive=False),
    ToolCalledStrategy(),
    ToolSequenceStrategy(order="in_order"),
    ToolPolicyStrategy(),
    ToolCallsStrategy(),  # expected-calls: each call and its arguments
)
CITIES = ["Mysore", "Ooty", "Coorg", "Hampi", "Madurai", "Kochi", "Pune", "Goa"]


def weather_sample(city: str) -> dict[str, Any]:
    return {
        "name": f"weather in {city}",
        "parameters": [f"What's the weather in {city}?"],
        "must-contain": [f"{city}: 2"],
        "expected-calls": [{"name": "get_weather", "arguments": {"city": city}}],
        "tools": {
            "get_weather": [
                {"arguments": {"city": city}, "result": f"{city}: 2{len(city)}°C, fixture"}
            ]
        },
    }


def booking_sample() -> dict[str, Any]:
    route = {"origin": "Bangalore", "destination": "Mysore"}
    return {
        "name": "book",
        "parameters": ["Book me a ticket from Bangalore to Mysore"],
        "must-contain": ["KSRTC-7", "₹99"],
        "expected-calls": [
            {"name": "get_ticket_price", "arguments": route},
            {"name": "book_ticket", "arguments": route},
        ],
        "tools": {
            "get_ticket_price": [{"arguments": route, "result": "bus ₹99"}],
            "book_ticket": [{"arguments": route, "result": "ticket KSRTC-7"}],
        },
    }


async def load(tmp_path: Path, *items: dict[str, Any]) -> Samples:
    path = tmp_path / "samples.yaml"
    path.write_text(yaml.safe_dump(list(items), allow_unicode=True), encoding="utf-8")
    return await Samples.load(path)


def trace_of(report: EvaluationReport, name: str) -> Trace:
    row = next(r for r in report.evaluations if r.name == name)
    assert row.trace is not None
    return row.trace


# --- the tests --------------------------------------------------------------------------------


async def test_the_travel_samples_pass_with_tool_checks_under_fixtures(
    framework: Framework, server: OpenAICompatibleServer
) -> None:
    samples = await Samples.load("examples/travel.yaml")
    async with framework.chat(server.base_url) as chat:
        faultless = [s for s in samples if "faults" not in s.tags]
        async with Scorer(concurrency=8, tools="fixtures") as scorer:
            report = await scorer.evaluate(faultless, chat, *TOOL_CHECKS)
        failed = [(r.name, r.strategy, r.explanation) for r in report.evaluations if not r.passed]
        assert failed == []
        assert LIVE == []
        booked = trace_of(report, "Book the bus")
        assert [(c.name, dict(c.arguments), c.mocked) for c in booked.tool_calls] == [
            ("get_ticket_price", {"origin": "Bangalore", "destination": "Mysore"}, True),
            ("book_ticket", {"origin": "Bangalore", "destination": "Mysore"}, True),
        ]


async def test_each_trace_holds_its_own_calls_at_concurrency_8(
    framework: Framework, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    samples = await load(tmp_path, *map(weather_sample, CITIES), booking_sample())
    async with framework.chat(server.base_url) as chat:
        async with Scorer(concurrency=8, tools="fixtures") as scorer:
            report = await scorer.evaluate(
                samples, chat, ContainsStrategy(), ToolCallsStrategy(order="in-order")
            )
        assert [(r.name, r.explanation) for r in report.evaluations if not r.passed] == []
        for city in CITIES:
            trace = trace_of(report, f"weather in {city}")
            assert [(c.name, dict(c.arguments), c.result) for c in trace.tool_calls] == [
                ("get_weather", {"city": city}, f"{city}: 2{len(city)}°C, fixture")
            ]
        assert [c.name for c in trace_of(report, "book").tool_calls] == [
            "get_ticket_price",
            "book_ticket",
        ]
        assert LIVE == []


async def test_a_call_without_fixture_is_an_error_row_naming_the_tool(
    framework: Framework, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    samples = await load(
        tmp_path,
        {"name": "no fixture", "parameters": ["Book me a ticket from Bangalore to Mysore"]},
    )
    async with framework.chat(server.base_url) as chat:
        report = await Scorer(tools="fixtures").evaluate(samples, chat, ContainsStrategy())
        (row,) = report.evaluations
        assert row.error is not None and row.error.type == "UnmockedToolCall"
        assert "get_ticket_price" in row.error.message
        assert LIVE == []


async def test_live_calls_are_recorded_once_under_the_called_name(
    framework: Framework, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    # get_weather's function calls an @aeval.tool function: still one call in the trace
    samples = await load(tmp_path, weather_sample("Mysore"), booking_sample())
    async with framework.chat(server.base_url) as chat:
        report = await Scorer(concurrency=2).evaluate(samples, chat, ContainsStrategy())
        weather = trace_of(report, "weather in Mysore")
        assert [(c.name, dict(c.arguments), c.result, c.mocked) for c in weather.tool_calls] == [
            ("get_weather", {"city": "Mysore"}, "Mysore: 24°C, clear skies (live)", False)
        ]
        booked = trace_of(report, "book")
        assert [(c.name, c.result) for c in booked.tool_calls] == [
            ("get_ticket_price", "Cheapest: KSRTC bus ₹180 (live)"),
            ("book_ticket", "ticket KSRTC-1042 (live)"),
        ]
        assert sorted(name for name, _ in LIVE) == [
            "book_ticket",
            "get_ticket_price",
            "get_weather",
        ]


async def test_a_replay_reproduces_the_answers_without_the_live_tools(
    framework: Framework, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    samples = await load(
        tmp_path, weather_sample("Mysore"), weather_sample("Ooty"), booking_sample()
    )
    async with framework.chat(server.base_url) as chat:
        recorded = await Scorer(concurrency=3).evaluate(samples, chat, ContainsStrategy())
        assert len(LIVE) == 4
        LIVE.clear()
        replay = Replay.from_traces({row.name: row.trace for row in recorded.evaluations})
        replayed = await Scorer(concurrency=3, tools=replay).evaluate(
            samples, chat, ContainsStrategy()
        )
        assert LIVE == []
        assert {r.name: r.output for r in replayed.evaluations} == {
            r.name: r.output for r in recorded.evaluations
        }
        assert all(
            call.mocked
            for row in replayed.evaluations
            for call in row.trace.tool_calls  # type: ignore[union-attr]
        )


@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
@pytest.mark.parametrize(
    "example",
    [
        "travel_openai.py",
        "travel_openai_agents.py",
        "travel_pydantic_ai.py",
        "travel_langgraph.py",
    ],
)
async def test_the_example_runs_offline(
    example: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    try:
        module = runpy.run_path(str(EXAMPLES / example), run_name=example.removesuffix(".py"))
        report = await module["main"](stream=stream)
    finally:  # travel_openai.py's instrument(stream_usage=True) is for the process
        openai_integration._STREAM_USAGE.clear()
    assert report.score == 100
    for row in report.evaluations:  # a streamed call's tokens are asked for, never unknown
        calls = row.trace.model_calls if row.trace is not None else ()
        assert all(None not in (c.prompt_tokens, c.completion_tokens) for c in calls), row.name
    booked = trace_of(report, "Book the bus")
    assert [(c.name, c.mocked) for c in booked.tool_calls] == [
        ("get_ticket_price", True),
        ("book_ticket", True),
    ]


async def test_model_calls_are_recorded_once_the_same_streamed_or_not(
    framework: Framework, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    samples = await load(tmp_path, weather_sample("Mysore"), booking_sample())
    seen: dict[bool, dict[str, list[tuple[Any, ...]]]] = {}
    for stream in (False, True):
        async with framework.chat(server.base_url, stream=stream) as chat:
            report = await Scorer(concurrency=2, tools="fixtures").evaluate(
                samples, chat, ContainsStrategy(), ToolCallsStrategy(order="in-order")
            )
        assert [(r.name, r.explanation) for r in report.evaluations if not r.passed] == []
        seen[stream] = {
            name: [
                (c.model, c.prompt_tokens, c.completion_tokens, tuple(c.requested_tools))
                for c in trace_of(report, name).model_calls
            ]
            for name in ("weather in Mysore", "book")
        }
    assert seen[True] == seen[False]
    weather = seen[False]["weather in Mysore"]
    assert [(model, tools) for model, _, _, tools in weather] == [
        (MODEL, ("get_weather",)),
        (MODEL, ()),
    ]
    assert all(prompt and completion is not None for _, prompt, completion, _ in weather)
    assert [tools for *_, tools in seen[False]["book"]] == [
        ("get_ticket_price",),
        ("book_ticket",),
        (),
    ]
