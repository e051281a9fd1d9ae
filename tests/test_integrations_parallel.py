"""The tool calls of one model reply, run at once by LangGraph, the OpenAI Agents SDK and
pydantic-ai, are in the trace in the order the model issued them, whichever started first.

The scripted ``travel_model`` asks for ``get_weather`` and ``find_attractions`` in one reply
to a trip question. Each agent holds ``get_weather`` back, with the framework's own hook
that runs before the tool (a LangChain ``wrap_tool_call`` middleware, a ``RunHooks``'s
``on_tool_start``, a pydantic-ai capability's ``before_tool_execute``), until
``find_attractions`` is running: the calls start in the reverse of the model's order, every
time (anyio Events, no sleeps), and the trace still holds the model's order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from aeval import Samples, Scorer
from aeval.strategies import ToolCallsStrategy, ToolSequenceStrategy
from aeval.testing import OpenAICompatibleServer
from aeval.trace import ToolCall
from examples.travel_agent import MODEL, SYSTEM, travel_model

pytestmark = pytest.mark.anyio

QUESTION = "Plan a 2-day trip to Mysore"
ISSUED = ["get_weather", "find_attractions", "get_ticket_price"]
"""The calls the model asks for, in its order: the first two in one reply."""

Chat = Callable[[str], Awaitable[str]]
Built = tuple[Chat, Callable[[], Awaitable[None]]]
"""The agent's chat and what closes its client."""


class Held:
    """``get_weather`` held back until ``find_attractions`` runs; what the tools ran, in
    order."""

    def __init__(self) -> None:
        self.attractions_running = anyio.Event()
        self.ran: list[str] = []

    async def before(self, tool: str) -> None:
        if tool == "get_weather":
            with anyio.fail_after(30):  # never hangs the suite if the calls ran one by one
                await self.attractions_running.wait()

    def weather(self, city: str) -> str:
        self.ran.append("get_weather")
        return f"{city}: 24°C"

    def attractions(self, city: str) -> str:
        self.ran.append("find_attractions")
        self.attractions_running.set()
        return f"{city} palace"

    def price(self, origin: str, destination: str) -> str:
        self.ran.append("get_ticket_price")
        return "bus ₹180"

    def tools(self) -> list[Callable[..., Awaitable[str]]]:
        """The three travel tools, for each framework's own decorator."""

        async def get_weather(city: str) -> str:
            """The current weather in a city in India."""
            return self.weather(city)

        async def find_attractions(city: str) -> str:
            """The top tourist attractions of a city."""
            return self.attractions(city)

        async def get_ticket_price(origin: str, destination: str) -> str:
            """The cheapest ticket between two cities."""
            return self.price(origin, destination)

        return [get_weather, find_attractions, get_ticket_price]


def langgraph_agent(base_url: str, held: Held, *, stream: bool) -> Built:
    pytest.importorskip("langgraph", reason="pip install 'aeval-engine[langchain]'")
    import httpx
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_tool_call
    from langchain.agents.middleware.types import ToolCallRequest
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.types import Command
    from pydantic import SecretStr

    from aeval.integrations import langchain

    langchain.instrument()

    tools = [tool(function) for function in held.tools()]

    @wrap_tool_call
    async def hold(
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        await held.before(request.tool_call["name"])
        return await handler(request)

    http = httpx.AsyncClient()
    model = ChatOpenAI(
        model=MODEL,
        base_url=base_url,
        api_key=SecretStr("local"),
        streaming=stream,
        http_async_client=http,
    )
    agent = create_agent(
        model,
        tools=tools,
        system_prompt=SYSTEM,
        middleware=[hold],
    )

    async def chat(question: str) -> str:
        state = await agent.ainvoke({"messages": [{"role": "user", "content": question}]})
        return str(state["messages"][-1].content)

    return chat, http.aclose


def openai_agents_agent(base_url: str, held: Held, *, stream: bool) -> Built:
    pytest.importorskip("agents", reason="pip install 'aeval-engine[openai-agents]'")
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        RunContextWrapper,
        RunHooks,
        Runner,
        Tool,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    from aeval.integrations import openai_agents

    openai_agents.instrument()
    set_tracing_disabled(True)

    tools: list[Tool] = [function_tool(function) for function in held.tools()]

    class Hold(RunHooks[Any]):
        async def on_tool_start(
            self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
        ) -> None:
            await held.before(tool.name)

    client = AsyncOpenAI(base_url=base_url, api_key="local")
    agent = Agent(
        name="Travel planner",
        instructions=SYSTEM,
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        tools=tools,
    )

    async def chat(question: str) -> str:
        if stream:
            result = Runner.run_streamed(agent, question, hooks=Hold())
            async for _ in result.stream_events():
                pass
            return str(result.final_output)
        return str((await Runner.run(agent, question, hooks=Hold())).final_output)

    return chat, client.close


def pydantic_ai_agent(base_url: str, held: Held, *, stream: bool) -> Built:
    pytest.importorskip("pydantic_ai", reason="pip install 'aeval-engine[pydantic-ai]'")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.tools import ToolDefinition

    from aeval.integrations import pydantic_ai

    pydantic_ai.instrument()

    class Hold(AbstractCapability[Any]):
        async def before_tool_execute(
            self,
            ctx: RunContext[Any],
            *,
            call: ToolCallPart,
            tool_def: ToolDefinition,
            args: dict[str, Any],
        ) -> dict[str, Any]:
            await held.before(call.tool_name)
            return args

    client = AsyncOpenAI(base_url=base_url, api_key="local")
    provider = OpenAIProvider(openai_client=client)
    agent = Agent(
        OpenAIChatModel(MODEL, provider=provider), instructions=SYSTEM, capabilities=[Hold()]
    )

    for function in held.tools():
        agent.tool_plain(function)

    async def chat(question: str) -> str:
        if stream:
            async with agent.run_stream(question) as result:
                return await result.get_output()
        return (await agent.run(question)).output

    return chat, client.close


AGENTS = {
    "langgraph": langgraph_agent,
    "openai_agents": openai_agents_agent,
    "pydantic_ai": pydantic_ai_agent,
}


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(handler=travel_model, model=MODEL) as running:
        yield running


@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
@pytest.mark.parametrize("framework", list(AGENTS))
async def test_the_calls_of_one_reply_are_in_the_model_s_order(
    framework: str, stream: bool, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    held = Held()
    chat, close = AGENTS[framework](server.base_url, held, stream=stream)
    route = {"origin": "Bangalore", "destination": "Mysore"}
    expected = [
        {"name": "get_weather", "arguments": {"city": "Mysore"}},
        {"name": "find_attractions", "arguments": {"city": "Mysore"}},
        {"name": "get_ticket_price", "arguments": route},
    ]
    path = tmp_path / "trip.yaml"
    sample = {"name": "trip", "parameters": [QUESTION], "expected-calls": expected}
    path.write_text(yaml.safe_dump([sample]), encoding="utf-8")
    samples = await Samples.load(path)
    try:
        report = await Scorer().evaluate(
            samples,
            chat,
            ToolSequenceStrategy(ISSUED, order="exact"),
            ToolCallsStrategy(order="exact"),
        )
    finally:
        await close()
    assert held.ran[:2] == ["find_attractions", "get_weather"]  # started the other way round
    assert [(r.strategy, r.explanation) for r in report.evaluations if not r.passed] == []
    (row, *_) = report.evaluations
    assert row.trace is not None
    calls: tuple[ToolCall, ...] = row.trace.tool_calls
    assert [c.name for c in calls] == ISSUED
    weather, attractions, _ = calls
    assert weather.started is not None and attractions.started is not None
    assert attractions.started <= weather.started  # each keeps its own start
