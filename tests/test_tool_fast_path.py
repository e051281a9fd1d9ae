"""The fast paths of recording a tool call (issue 25) against the general ones.

``@aeval.tool``'s wrapper reads a call without keywords without ``Signature.bind``: the tool
calls it records are the ones the general reading (``inspect.Signature.bind``) gives, over varied
signatures, values, sync and async functions and methods. ``record_tool_call`` keeps the
same tool call as the recorder's own method. A snapshot whose calls are made on first read
is the trace made at once.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest

import aeval
from aeval.trace import ToolCall, Trace, record_tool_call, recording


class Thing:
    def __repr__(self) -> str:
        return "Thing()"


def none() -> str:
    return "none"


def one(city: Any) -> Any:
    return city


def scalars(a: Any, b: Any = 2, c: Any = None, d: Any = "x", e: Any = 1.5, f: Any = True) -> Any:
    return [a, b, c, d, e, f]


def all_defaulted(a: Any = "a", b: Any = 0) -> Any:
    return a


def mutable_default(a: Any, b: Any = [], c: Any = None) -> Any:  # noqa: B006 - the case
    return None


def positional_only(a: Any, /, b: Any = 1) -> Any:
    return a


def variadic(a: Any, *rest: Any, k: Any = 1, **more: Any) -> Any:
    return a


def failing(a: Any, b: Any = 1) -> Any:
    raise ValueError(f"bad {a}")


class Service:
    def method(self, a: Any, b: Any = "b") -> Any:
        return a

    async def method_async(self, a: Any, b: Any = None) -> Any:
        return {"a": a}

    @classmethod
    def make(cls, a: Any, b: Any = 3) -> Any:
        return a


async def one_async(city: Any, days: Any = 1) -> Any:
    return city


async def failing_async(a: Any) -> Any:
    raise KeyError(a)


VALUES: list[Any] = ["s", 0, 7, 2.5, True, None, [1, 2], {"k": "v"}, (1, "t"), Thing()]

CASES: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
    (none, ()),
    (all_defaulted, ()),
    (all_defaulted, ("z",)),
    (all_defaulted, ("z", 5)),
    (positional_only, ("p",)),
    (variadic, ("v", 1, 2)),
    (mutable_default, ("m",)),
    (mutable_default, ("m", ["x"])),
]
for value in VALUES:
    CASES += [
        (one, (value,)),
        (scalars, (value,)),
        (scalars, ("a", value)),
        (scalars, ("a", 1, value, "d", 2.0, value)),
        (failing, (value,)),
        (one_async, (value,)),
        (one_async, (value, value)),
        (failing_async, (value,)),
        (Service().method, (value,)),
        (Service().method_async, (value, value)),
        (Service.make, (value,)),
    ]


def _general(function: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    """The arguments as ``Signature.bind`` reads them (``self``/``cls`` left out)."""
    underlying = getattr(function, "__func__", function)
    bound = inspect.signature(underlying).bind(
        *((None, *args) if underlying is not function else args)
    )
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    for skip in ("self", "cls"):
        arguments.pop(skip, None)
    for parameter in inspect.signature(underlying).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(arguments.pop(parameter.name, {}))
    return arguments


def _recorded(function: Callable[..., Any], args: tuple[Any, ...]) -> ToolCall:
    traced = aeval.tool(name="tool")(getattr(function, "__func__", function))
    owner = getattr(function, "__self__", None)
    call_args = args if owner is None else (owner, *args)
    with recording() as recorder:
        try:
            outcome = traced(*call_args)
            if inspect.iscoroutine(outcome):
                asyncio.run(outcome)
        except Exception:
            pass
    trace = recorder.snapshot()
    assert trace is not None
    (call,) = trace.tool_calls
    return call


def _expected(function: Callable[..., Any], args: tuple[Any, ...], call: ToolCall) -> ToolCall:
    with recording() as recorder:
        record_tool_call(
            "tool",
            _general(function, args),
            result=call.result,
            error=None if call.error is None else f"{call.error.type}: {call.error.message}",
        )
    trace = recorder.snapshot()
    assert isinstance(trace, Trace)
    return trace.tool_calls[0]


@pytest.mark.parametrize(("function", "args"), CASES)
def test_a_call_without_keywords_is_recorded_as_signature_bind_reads_it(
    function: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    call = _recorded(function, args)
    expected = _expected(function, args, call)
    assert list(call.arguments.items()) == list(expected.arguments.items())
    assert call.truncated == expected.truncated
    assert call.mocked is False
    outcome: Any = None
    error: BaseException | None = None
    try:
        outcome = function(*args)
        if inspect.iscoroutine(outcome):
            outcome = asyncio.run(outcome)
    except Exception as exc:
        error = exc
    if error is None:
        assert call.error is None
        assert call.result == expected.result
        assert (call.result is None) == (outcome is None)
    else:
        assert call.error is not None and call.error.type == type(error).__name__


def test_an_argument_mutated_after_the_call_is_recorded_as_the_call_saw_it() -> None:
    traced = aeval.tool(one)
    items = [1]
    with recording() as recorder:
        traced(items)
        items.append(2)
    trace = recorder.snapshot()
    assert trace is not None
    assert trace.tool_calls[0].arguments == {"city": [1]}
    assert trace.tool_calls[0].result == [1]


def test_a_call_with_keywords_or_a_wrong_count_takes_the_general_reading() -> None:
    traced: Any = aeval.tool(scalars)
    with recording() as recorder:
        traced("a", c=3)
        with pytest.raises(TypeError):
            traced()
        with pytest.raises(TypeError):
            traced(*range(7))
    trace = recorder.snapshot()
    assert trace is not None
    first, missing, extra = trace.tool_calls
    assert dict(first.arguments) == {"a": "a", "b": 2, "c": 3, "d": "x", "e": 1.5, "f": True}
    assert dict(missing.arguments) == {} and missing.error is not None
    assert dict(extra.arguments) == {"args": list(range(7))} and extra.error is not None


MANUAL: list[tuple[Any, Any, Any]] = [
    ({}, None, None),
    (None, "r", None),
    ({"a": 1, "b": "x", "c": None, "d": 2.5, "e": False}, 3, None),
    ({"a": [1]}, "r", None),
    ({"a": 1}, {"k": [1, 2]}, None),
    ({"a": 1}, None, "it failed"),
    ({"a": "s"}, None, ValueError("no")),
    ({1: "not a str key"}, "r", None),
    ({"a": Thing()}, Thing(), None),
    ({"a": "x" * 5000}, "y" * 5000, None),
]


@pytest.mark.parametrize(("arguments", "result", "error"), MANUAL)
def test_record_tool_call_keeps_what_the_recorder_s_general_path_keeps(
    arguments: Any, result: Any, error: Any
) -> None:
    with recording() as recorder:
        record_tool_call("manual", arguments, result=result, error=error)
    with recording() as general:
        general.add_tool_call(
            general.start(), "manual", arguments or {}, result=result, error=error
        )
    fast, slow = recorder.snapshot(), general.snapshot()
    assert fast is not None and slow is not None
    (made,), (expected,) = fast.tool_calls, slow.tool_calls
    assert list(made.arguments.items()) == list(expected.arguments.items())
    assert (made.name, made.result, made.error, made.mocked, made.truncated) == (
        expected.name,
        expected.result,
        expected.error,
        expected.mocked,
        expected.truncated,
    )
    assert fast.truncated == slow.truncated and fast.dropped == slow.dropped


def _recorder_of(calls: int, max_events: int, redact: Callable[[Any], Any] | None = None) -> Any:
    traced = aeval.tool(scalars)
    limits = aeval.trace.TraceLimits(max_events=max_events)
    with recording(limits=limits, redact=redact) as recorder:
        for index in range(calls):
            traced(index, [index] if index % 2 else "b", "x" * (index * 700))
            record_tool_call("manual", {"i": index}, result=index)
    return recorder


@pytest.mark.parametrize(("calls", "max_events"), [(1, 10), (4, 10), (5, 10), (9, 4)])
def test_a_snapshot_made_on_first_read_is_the_one_made_at_once(calls: int, max_events: int) -> None:
    """A recorder with a redactor (here one that changes nothing) makes its trace at once."""
    fast = _recorder_of(calls, max_events)
    quick = fast.snapshot()
    locked = _recorder_of(calls, max_events, lambda value: value).snapshot()
    assert quick is not None and locked is not None
    assert quick.dropped == locked.dropped and quick.truncated == locked.truncated
    assert [(c.name, dict(c.arguments), c.result, c.truncated) for c in quick.tool_calls] == [
        (c.name, dict(c.arguments), c.result, c.truncated) for c in locked.tool_calls
    ]
    assert fast.snapshot() == quick and fast.snapshot().tool_calls[0] is quick.tool_calls[0]


def test_record_tool_call_keeps_the_arguments_as_they_were_when_it_was_called() -> None:
    items, arguments = [1], {"a": "x"}
    with recording() as recorder:
        record_tool_call("manual", {"items": items}, result="r")
        record_tool_call("manual", arguments, result=items)
        items.append(2)
        arguments["a"] = "changed"
    trace = recorder.snapshot()
    assert trace is not None
    assert trace.tool_calls[0].arguments == {"items": [1]}
    assert trace.tool_calls[1].arguments == {"a": "x"} and trace.tool_calls[1].result == [1]
