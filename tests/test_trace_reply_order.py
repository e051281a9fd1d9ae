"""The tool calls one model reply issued are in the trace in the reply's order, whichever
started first (aeval/trace/_route.py's "calls issued together"): the model route notes the
reply's call ids, a tool route that knows a call's id records the call with its place, and
the recorder puts the reply's calls in that order, in the places they took in start order.
Calls started with anyio Events, never sleeps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from aeval.trace import Fixtures, record_tool_call, recording
from aeval.trace._context import Recorder
from aeval.trace._route import call_tool, call_tool_async, record_model

pytestmark = pytest.mark.anyio

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
