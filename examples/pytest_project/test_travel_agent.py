"""Plain pytest tests of what the travel agent of ``examples/travel_agent.py`` did.

``aeval.trace.capture()`` records the agent's tool and model calls in a test, serving the
tools' results from the fixtures of ``examples/travel.yaml``; ``assert_trace`` checks them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from travel_agent import MODEL, TravelAgent, answer, travel_model

from aeval import Samples
from aeval.testing import OpenAICompatibleServer
from aeval.trace import Fixtures, assert_trace, capture

DATASET = Path(__file__).parent.parent / "travel.yaml"

pytestmark = pytest.mark.anyio


@pytest.fixture
async def agent() -> AsyncIterator[TravelAgent]:
    """The agent, its model played by the scripted local server."""
    async with (
        OpenAICompatibleServer(handler=travel_model, model=MODEL) as server,
        TravelAgent(server.base_url) as agent,
    ):
        yield agent


async def fixtures_of(name: str) -> Fixtures:
    """The ``tools:`` fixtures of one sample of the dataset."""
    samples = await Samples.load(DATASET)
    (sample,) = (sample for sample in samples if sample.name == name)
    return Fixtures(sample.metadata["tool_fixtures"])


async def test_a_trip_plan_checks_weather_and_sights_before_the_ticket(agent: TravelAgent) -> None:
    async with capture(tools=await fixtures_of("Two days in Mysore")) as trace:
        answer = await agent.chat("Plan a 2-day trip to Mysore within ₹3,000")
    assert "Mysore Palace" in answer and "₹180" in answer
    (
        assert_trace(trace)
        .called("get_weather", times=1)
        .called_with("find_attractions", city="Mysore")
        .called_in_order(["get_weather", "get_ticket_price"])
        .not_called("book_ticket")
    )


async def test_a_weather_timeout_is_reported_not_invented(agent: TravelAgent) -> None:
    async with capture(tools=await fixtures_of("Weather service down")) as trace:
        answer = await agent.chat("What's the weather in Coorg?")
    assert "try again" in answer and "°C" not in answer
    assert_trace(trace).called_with("get_weather", city="Coorg")
    (call,) = trace.tool_calls
    assert call.error is not None and call.error.type == "ToolTimeoutError"


async def test_the_plain_function_answers_from_the_fixtures() -> None:
    async with capture(tools=await fixtures_of("Bangalore to Mysore")) as trace:
        reply = await answer("How do I get from Bangalore to Mysore?")
    assert reply == "Getting there: Cheapest: KSRTC bus ₹180, journey 3 hours."
    assert_trace(trace).called_with("get_ticket_price", origin="Bangalore", destination="Mysore")
