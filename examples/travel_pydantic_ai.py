"""Seed 003's travel agent on pydantic-ai, evaluated with one line added.

Run: ``pip install 'aeval-engine[pydantic-ai]'`` then ``python examples/travel_pydantic_ai.py``.

The agent is written as pydantic-ai's docs write one: an ``Agent`` with ``@agent.tool_plain``
tools, its model an ``OpenAIChatModel`` on an ``OpenAIProvider``, run with
``agent.run``. The only line for aeval is ``pydantic_ai.instrument()``: every tool call
(under the name the model called: ``book_ticket`` is the function ``reserve_seat`` renamed)
and every model call lands in the trace of the sample running it, and under
``Scorer(tools="fixtures")`` the tools are served from ``travel.yaml``'s fixtures instead of
running (they have no live API here: a live call would fail). A failed tool reaches the model
as ``error: ...`` through a ``Hooks`` capability's ``on_tool_execute_error``.

Offline: the model is the scripted ``travel_model`` of ``travel_agent.py`` on
``aeval.testing``'s OpenAI-compatible server on 127.0.0.1; ``STREAM=1`` runs the agent
streamed (``agent.run_stream``), which records the same model calls and tokens.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition
from travel_agent import MODEL, SYSTEM, NoLiveAPIError, framework_checks, travel_model

from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.integrations import pydantic_ai
from aeval.testing import OpenAICompatibleServer

HERE = Path(__file__).parent

pydantic_ai.instrument()

hooks = Hooks[Any]()


@hooks.on.tool_execute_error
async def said_error(
    ctx: RunContext[Any],
    /,
    *,
    call: ToolCallPart,
    tool_def: ToolDefinition,
    args: dict[str, Any],
    error: Exception,
) -> str:
    """What the model reads when a tool fails."""
    return f"error: {error}"


agent = Agent(instructions=SYSTEM, capabilities=[hooks])


@agent.tool_plain
async def get_weather(city: str) -> str:
    """The current weather in a city in India."""
    raise NoLiveAPIError("no live weather API: evaluate with Scorer(tools='fixtures')")


@agent.tool_plain
async def find_attractions(city: str) -> str:
    """The top tourist attractions of a city."""
    raise NoLiveAPIError("no live attractions API")


@agent.tool_plain
async def get_ticket_price(origin: str, destination: str) -> str:
    """The cheapest ticket between two cities."""
    raise NoLiveAPIError("no live ticket API")


@agent.tool_plain(name="book_ticket")
async def reserve_seat(origin: str, destination: str) -> str:
    """Book the cheapest ticket between two cities."""
    raise NoLiveAPIError("no live booking API")


async def main(*, stream: bool = False) -> EvaluationReport:
    """Evaluate the agent on ``travel.yaml`` with fixtures, 8 samples at a time."""
    samples = await Samples.load(HERE / "travel.yaml")
    async with (
        OpenAICompatibleServer(handler=travel_model, model=MODEL) as server,
        AsyncOpenAI(base_url=server.base_url, api_key="not-needed-locally") as client,
        Scorer(concurrency=8, timeout=30, tools="fixtures") as scorer,
    ):
        provider = OpenAIProvider(openai_client=client)
        model = OpenAIChatModel(MODEL, provider=provider)

        async def chat(question: str) -> str:
            if stream:
                async with agent.run_stream(question, model=model) as result:
                    return await result.get_output()
            return (await agent.run(question, model=model)).output

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
