"""Traces whose tool calls are made on first read (issue 25): a recorder's snapshot keeps the
raw calls and makes the frozen ``ToolCall`` values only when the trace is read. No reader can
tell such a trace from one made at once; these tests check every way of reading one.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
import threading
from collections.abc import Callable
from typing import Any

import pytest
from _calls import Calls

import aeval
from aeval.trace import (
    Recorder,
    ToolCall,
    Trace,
    TraceLimits,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
    redact_trace,
    render_trace,
)

LIMITS = TraceLimits(max_text=10, max_items=3)


@aeval.tool
def lookup(city: str, days: int = 1, unit: str | None = None) -> Any:
    return {"city": city, "days": days} if unit == "dict" else f"{city} x{days}"


@aeval.tool
def broken(city: str) -> str:
    raise ValueError(f"no weather for {city}")


def _record() -> Recorder:
    """A recording of every kind of value a trace bounds, with its limits small."""
    with recording(limits=LIMITS) as recorder:
        lookup("Mysore")
        lookup("a city with a long name", 2)  # an argument and a result cut
        lookup("Pune", days=3, unit="dict")  # a result that is a mapping
        lookup("Goa", 1, "C")
        with pytest.raises(ValueError):
            broken("Oslo")
        record_tool_call("ratio", {"x": math.inf, "y": 0.5}, result=math.nan)
        record_tool_call("many", {"a": 1, "b": 2, "c": 3, "d": 4}, result="short")
        record_tool_call("keys", {1: "one", "two": 2}, result=None)  # type: ignore[dict-item]
        record_tool_call("nested", {"order": {"id": 1}}, result=[1, 2, 3, 4, 5])
        record_tool_call("empty")
        record_model_call(model="m", prompt_tokens=3, completion_tokens=1, duration=0.5)
        record_retrieval(["a document", {"id": "d2", "text": "t", "score": 0.5}], query="q")
    return recorder


def _unmade(recorder: Recorder) -> Trace:
    """A snapshot that leaves its tool calls to be made on first read: it makes none."""
    with Calls() as profile:
        trace = recorder.snapshot()
    assert trace is not None
    assert "frozen_tool_call" not in profile.names
    return trace


def _eager(trace: Trace) -> Trace:
    """The same trace made at once, through the dataclass's own constructor."""
    return Trace(
        tuple(trace.tool_calls),
        trace.model_calls,
        trace.retrievals,
        trace.truncated,
        trace.dropped,
    )


def test_an_unmade_trace_holds_the_values_bounded_as_at_call_time() -> None:
    trace = _unmade(_record())
    calls = {call.name: call for call in trace.tool_calls}
    first, long, mapping, plain = trace.calls_of("lookup")
    assert dict(first.arguments) == {"city": "Mysore", "days": 1, "unit": None}
    assert first.result == "Mysore x1" and first.truncated == 0
    assert long.arguments["city"] == "a city wit… [13 of 23 characters cut]"
    assert long.result == "a city wit… [16 of 26 characters cut]"
    assert long.truncated == 2
    assert mapping.result == {"city": "Pune", "days": 3}
    assert dict(plain.arguments) == {"city": "Goa", "days": 1, "unit": "C"}
    assert calls["broken"].error is not None and calls["broken"].result is None
    assert str(calls["broken"].error) == "ValueError: no weather for Oslo"
    assert dict(calls["ratio"].arguments) == {"x": "inf", "y": 0.5}
    assert calls["ratio"].result == "nan"
    assert dict(calls["many"].arguments) == {"a": 1, "b": 2, "c": 3, "…": "[1 more entries cut]"}
    assert calls["many"].truncated == 1
    assert dict(calls["keys"].arguments) == {"1": "one", "two": 2}
    assert calls["nested"].result == [1, 2, 3, "… [2 more items cut]"]
    assert dict(calls["empty"].arguments) == {}
    assert trace.truncated == sum(call.truncated for call in trace.tool_calls) == 4
    assert all(call.started is not None and call.ended is not None for call in trace.tool_calls)
    assert all(call.started <= call.ended for call in trace.tool_calls)  # type: ignore[operator]
    assert [type(event).__name__ for event in trace.events()][-2:] == ["ModelCall", "Retrieval"]


READS: dict[str, Callable[[Trace], Any]] = {
    "tool_calls": lambda t: t.tool_calls,
    "truncated": lambda t: t.truncated,
    "fields": lambda t: [getattr(t, f.name) for f in dataclasses.fields(t)],
    "repr": repr,
    "bool": bool,
    "asdict": dataclasses.asdict,
    "astuple": dataclasses.astuple,
    "replace": lambda t: dataclasses.replace(t, dropped=7),
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": lambda t: pickle.loads(pickle.dumps(t)),
    "to_dict": lambda t: t.to_dict(),
    "from_dict": lambda t: Trace.from_dict(t.to_dict()),
    "events": lambda t: list(t.events()),
    "tool_names": lambda t: t.tool_names(),
    "calls_of": lambda t: t.calls_of("lookup"),
    "tokens": lambda t: t.tokens,
    "seconds": lambda t: t.seconds,
    "render": render_trace,
    "redact": lambda t: redact_trace(t, lambda v: v),
    "match": lambda t: t.__match_args__,
}


def _outcome(read: Callable[[Trace], Any], trace: Trace) -> Any:
    """What ``read`` returns, or the type and message of what it raises."""
    try:
        return read(trace)
    except Exception as error:
        return type(error), str(error)


@pytest.mark.parametrize("read", list(READS))
def test_every_read_of_an_unmade_trace_gives_what_the_trace_made_at_once_gives(read: str) -> None:
    recorder = _record()
    eager = _eager(_unmade(recorder))
    first = _unmade(recorder)  # read first in this way, nothing made before
    assert _outcome(READS[read], first) == _outcome(READS[read], eager)
    assert first == eager and eager == first
    assert repr(first) == repr(eager)


def test_an_unmade_trace_equals_one_made_at_once_compared_either_side_first() -> None:
    recorder = _record()
    eager = _eager(_unmade(recorder))
    assert eager == _unmade(recorder)
    assert _unmade(recorder) == eager
    assert _outcome(hash, _unmade(recorder)) == _outcome(hash, eager)
    assert _unmade(recorder) != dataclasses.replace(eager, truncated=eager.truncated + 1)
    assert pickle.loads(pickle.dumps(_unmade(recorder))) == eager
    assert type(pickle.loads(pickle.dumps(_unmade(recorder))).tool_calls) is tuple


def test_an_unmade_trace_stays_frozen() -> None:
    trace = _unmade(_record())
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.tool_calls = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.truncated = 0  # type: ignore[misc]
    with Calls() as profile:
        assert len(trace.tool_calls) == 10
    assert "frozen_tool_call" in profile.names  # still unmade: made on this first read


def test_every_snapshot_and_every_thread_read_the_same_calls() -> None:
    recorder = _record()
    traces = [_unmade(recorder) for _ in range(8)]
    barrier = threading.Barrier(len(traces))
    seen: list[tuple[ToolCall, ...]] = [() for _ in traces]

    def read(index: int) -> None:
        barrier.wait()
        seen[index] = traces[index].tool_calls

    threads = [threading.Thread(target=read, args=(index,)) for index in range(len(traces))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for calls in seen[1:]:
        assert all(mine is theirs for mine, theirs in zip(calls, seen[0], strict=True))
    made_at_once = recorder._snapshot_now()
    assert made_at_once is not None and made_at_once == traces[0]
    assert made_at_once.tool_calls[0] is seen[0][0]


def test_a_redacting_recorder_makes_its_trace_at_once_and_redacts_it() -> None:
    def redact(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: redact(item) for key, item in value.items()}
        return "***" if value == "secret" else value

    with recording(redact=redact) as recorder:
        lookup("secret")
    with Calls() as profile:
        trace = recorder.snapshot()
    assert trace is not None
    assert "frozen_tool_call" in profile.names
    assert trace.tool_calls[0].arguments["city"] == "***"


def test_a_snapshot_makes_no_tool_call_until_read() -> None:
    """Counted with ``sys.setprofile``: the snapshot of 50 calls runs a bounded number of
    Python functions, none of them the one that makes a ``ToolCall``."""
    with recording() as recorder:
        for index in range(50):
            lookup(f"city {index}")
    with Calls() as profile:
        trace = recorder.snapshot()
    names = profile.names
    assert "_freeze" not in names and "frozen_tool_call" not in names
    assert len(names) <= 10, names
    assert trace is not None and len(trace.tool_calls) == 50
