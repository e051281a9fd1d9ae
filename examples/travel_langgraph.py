"""Seed 003's travel agent on LangChain 1.x / LangGraph, evaluated with one line added.

Run: ``pip install 'aeval-engine[langchain]'`` then ``python examples/travel_langgraph.py``.

The agent is written as LangChain's docs write one: ``@tool`` functions, a ``ChatOpenAI``
model on another OpenAI-compatible API (``base_url``), and ``create_agent`` (a LangGraph
graph) invoked with ``ainvoke``. The only line for aeval is ``langchain.instrument()``: every
tool call (under the name the model called: ``book_ticket`` is the function ``reserve_seat``
named by ``@tool("book_ticket")``) and every model call lands in the trace of the sample
running it, and under ``Scorer(tools="fixtures")`` the tools are served from ``travel.yaml``'s
fixtures instead of running (they have no live API here: a live call would fail). A failed
tool reaches the model as ``error: ...`` through a ``wrap_tool_call`` middleware, as
LangChain documents for tool errors.

Offline: the model is the scripted ``travel_model`` of ``travel_agent.py`` on
``aeval.testing``'s OpenAI-compatible server on 127.0.0.1; ``STREAM=1`` runs the agent with
a streaming model (``ChatOpenAI(streaming=True)``, ``stream_usage=True`` for its tokens),
which records the same model calls and tokens.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from langchain.agents import create_agent
from langchain.agents.middleware import wrap_tool_call
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.types import Command
from travel_agent import MODEL, SYSTEM, NoLiveAPIError, framework_checks, travel_model

from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.integrations import langchain
from aeval.testing import OpenAICompatibleServer

HERE = Path(__file__).parent

langchain.instrument()


@tool
async def get_weather(city: str) -> str:
    """The current weather in a city in India."""
    raise NoLiveAPIError("no live weather API: evaluate with Scorer(tools='fixtures')")


@tool
async def find_attractions(city: str) -> str:
    """The top tourist attractions of a city."""
    raise NoLiveAPIError("no live attractions API")


@tool
async def get_ticket_price(origin: str, destination: str) -> str:
    """The cheapest ticket between two cities."""
    raise NoLiveAPIError("no live ticket API")


@tool("book_ticket")
async def reserve_seat(origin: str, destination: str) -> str:
    """Book the cheapest ticket between two cities."""
    raise NoLiveAPIError("no live booking API")


@wrap_tool_call
async def said_error(
    request: ToolCallRequest,
    handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
) -> ToolMessage | Command[Any]:
    """What the model reads when a tool fails."""
    try:
        return await handler(request)
    except Exception as error:
        return ToolMessage(content=f"error: {error}", tool_call_id=request.tool_call["id"])


def travel_agent(base_url: str, http: httpx.AsyncClient, *, stream: bool = False) -> Any:
    """The agent, its model served at ``base_url`` through ``http`` (closed by the caller)."""
    model = ChatOpenAI(
        model=MODEL,
        base_url=base_url,
        api_key="not-needed-locally",
        http_async_client=http,
        streaming=stream,
        stream_usage=True,  # tokens of streamed replies too
    )
    return create_agent(
        model,
        tools=[get_weather, find_attractions, get_ticket_price, reserve_seat],
        system_prompt=SYSTEM,
        middleware=[said_error],
    )


async def main(*, stream: bool = False) -> EvaluationReport:
    """Evaluate the agent on ``travel.yaml`` with fixtures, 8 samples at a time."""
    samples = await Samples.load(HERE / "travel.yaml")
    async with (
        OpenAICompatibleServer(handler=travel_model, model=MODEL) as server,
        Scorer(concurrency=8, timeout=30, tools="fixtures") as scorer,
        httpx.AsyncClient() as http,
    ):
        agent = travel_agent(server.base_url, http, stream=stream)

        async def chat(question: str) -> str:
            state = await agent.ainvoke({"messages": [{"role": "user", "content": question}]})
            return str(state["messages"][-1].content)

        report = await scorer.evaluate(
            samples,
            chat,
            *framework_checks(),
        )
    report.print()
    assert_that(report).has_score_greater_than(99)
    return report


if __name__ == "__main__":
    anyio.run(lambda: main(stream=os.environ.get("STREAM") == "1"))
    sys.exit(0)
