"""Seed 003's travel agent on the OpenAI Agents SDK, evaluated with one line added.

Run: ``pip install 'aeval-engine[openai-agents]'`` then ``python examples/travel_openai_agents.py``.

The agent is written as the SDK's docs write one for a model behind another OpenAI-compatible
API: ``@function_tool`` functions, an ``Agent`` on an ``OpenAIChatCompletionsModel``, and
``Runner.run``. The only line for aeval is ``openai_agents.instrument()``: every tool call
(under the name the model called: ``book_ticket`` is the function ``reserve_seat`` renamed)
and every model call lands in the trace of the sample running it, and under
``Scorer(tools="fixtures")`` the tools are served from ``travel.yaml``'s fixtures instead of
running (they have no live API here: a live call would fail). A failed tool reaches the model
as ``error: ...`` through the tool's ``failure_error_function``, as the SDK documents.

Offline: the model is the scripted ``travel_model`` of ``travel_agent.py`` on
``aeval.testing``'s OpenAI-compatible server on 127.0.0.1; ``STREAM=1`` runs the agent
streamed (``Runner.run_streamed``), which records the same model calls and tokens.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunContextWrapper,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from travel_agent import MODEL, SYSTEM, NoLiveAPIError, framework_checks, travel_model

from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.integrations import openai_agents
from aeval.testing import OpenAICompatibleServer

HERE = Path(__file__).parent

openai_agents.instrument()
set_tracing_disabled(True)  # no OpenAI key to export the SDK's own traces with


def said_error(context: RunContextWrapper[Any], error: Exception) -> str:
    """What the model reads when a tool fails."""
    return f"error: {error}"


@function_tool(failure_error_function=said_error)
async def get_weather(city: str) -> str:
    """The current weather in a city in India."""
    raise NoLiveAPIError("no live weather API: evaluate with Scorer(tools='fixtures')")


@function_tool(failure_error_function=said_error)
async def find_attractions(city: str) -> str:
    """The top tourist attractions of a city."""
    raise NoLiveAPIError("no live attractions API")


@function_tool(failure_error_function=said_error)
async def get_ticket_price(origin: str, destination: str) -> str:
    """The cheapest ticket between two cities."""
    raise NoLiveAPIError("no live ticket API")


async def reserve_seat(origin: str, destination: str) -> str:
    """Book the cheapest ticket between two cities."""
    raise NoLiveAPIError("no live booking API")


book_ticket = function_tool(
    reserve_seat, name_override="book_ticket", failure_error_function=said_error
)


def travel_agent(client: AsyncOpenAI) -> Agent[Any]:
    """The agent, its model behind ``client``."""
    return Agent(
        name="Travel planner",
        instructions=SYSTEM,
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        model_settings=ModelSettings(include_usage=True),  # tokens of streamed replies too
        tools=[get_weather, find_attractions, get_ticket_price, book_ticket],
    )


async def main(*, stream: bool = False) -> EvaluationReport:
    """Evaluate the agent on ``travel.yaml`` with fixtures, 8 samples at a time."""
    samples = await Samples.load(HERE / "travel.yaml")
    async with (
        OpenAICompatibleServer(handler=travel_model, model=MODEL) as server,
        AsyncOpenAI(base_url=server.base_url, api_key="not-needed-locally") as client,
        Scorer(concurrency=8, timeout=30, tools="fixtures") as scorer,
    ):
        agent = travel_agent(client)

        async def chat(question: str) -> str:
            if stream:
                streamed = Runner.run_streamed(agent, question)
                async for _ in streamed.stream_events():
                    pass
                return str(streamed.final_output)
            return str((await Runner.run(agent, question)).final_output)

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
