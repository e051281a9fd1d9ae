"""Traces on live traffic: ``online.watch`` records each watched call's trace, ``submit``
takes one, the rows carry it and agent strategies check it."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _sinks import Rows

import aeval
from aeval import EvaluationResult, EvaluationSample, Scorer
from aeval.online import OnlineEvaluator
from aeval.strategies import ToolCalledStrategy, ToolPolicyStrategy
from aeval.trace import ToolCall, Trace, current

pytestmark = pytest.mark.anyio

LIVE: list[str] = []


@aeval.tool
async def get_weather(city: str) -> str:
    LIVE.append(city)
    await anyio.lowlevel.checkpoint()
    return f"live weather of {city}"


@aeval.tool
def book_ticket(attraction: str) -> int:
    return 7


async def test_watch_records_each_calls_own_trace_for_the_agent_strategies() -> None:
    sink = Rows()
    async with OnlineEvaluator(
        ToolCalledStrategy("get_weather"), ToolPolicyStrategy(deny=["book_ticket"]), sink=sink
    ) as online:

        @online.watch
        async def answer(city: str) -> str:
            weather = await get_weather(city)
            if city == "Ooty":
                book_ticket("Lake")
            return weather

        async with anyio.create_task_group() as group:
            for city in ("Mysore", "Ooty", "Hampi"):
                group.start_soon(answer, city)
        await online.join()
    by_city = {row.sample.parameters.get("city"): row for row in sink.rows if row.position == 1}
    assert set(by_city) == {"Mysore", "Ooty", "Hampi"}
    for city, row in by_city.items():
        assert row.trace is not None
        assert [call.arguments for call in row.trace.calls_of("get_weather")] == [{"city": city}]
    assert not by_city["Ooty"].passed and by_city["Mysore"].passed
    assert all(row.passed for row in sink.rows if row.position == 0)
    assert sorted(LIVE[-3:]) == ["Hampi", "Mysore", "Ooty"]


async def test_submit_takes_a_trace_or_a_capture_and_refuses_anything_else() -> None:
    sink = Rows()
    seen: list[Trace | None] = []

    def sees(sample: EvaluationSample, output: Any) -> EvaluationResult:
        seen.append(current())
        return EvaluationResult.from_boolean(True)

    recorded = Trace(tool_calls=(ToolCall("search", {"q": "x"}, ["a"]),))
    async with OnlineEvaluator(ToolCalledStrategy("search"), sees, sink=sink) as online:
        assert online.submit("q1", "answer", trace=recorded)
        with aeval.trace.capture() as trace:
            book_ticket("Palace")
        assert online.submit("q2", "answer", trace=trace)
        assert not online.submit("q3", "answer", trace="search")  # type: ignore[arg-type]
        assert online.submit("q4", "answer")
        await online.join()
    by_input = {row.sample.parameters[0]: row for row in sink.rows if row.position == 0}
    assert by_input["q1"].passed and by_input["q1"].trace == recorded
    assert not by_input["q2"].passed
    assert by_input["q2"].trace is not None
    assert by_input["q2"].trace.tool_names() == ("book_ticket",)
    assert by_input["q4"].trace is None and not by_input["q4"].passed
    assert "q3" not in by_input
    assert sorted(map(str, seen)) == sorted(map(str, [recorded, trace.trace, None]))


async def test_a_watched_call_inside_a_sample_serves_its_fixtures_and_keeps_its_calls() -> None:
    sink = Rows()
    async with OnlineEvaluator(ToolCalledStrategy("get_weather"), sink=sink) as online:

        @online.watch
        async def answer(city: str) -> str:
            return await get_weather(city)

        sample = EvaluationSample(
            "s",
            ["Mysore"],
            metadata={
                "tool_fixtures": {"get_weather": [{"arguments": {}, "result": "fixture sun"}]}
            },
        )
        report = await Scorer(tools="fixtures").evaluate(
            [sample], answer, ToolCalledStrategy("get_weather")
        )
        await online.join()
    LIVE.clear()
    (row,) = report.evaluations
    assert row.output == "fixture sun" and row.passed
    assert row.trace is not None and row.trace.tool_calls[0].mocked
    (online_row,) = sink.rows
    assert online_row.trace is not None and online_row.trace.tool_calls == row.trace.tool_calls
