"""A snapshot of raw calls only (tool calls as recorded, model calls as received by the httpx
hooks) is taken without the recorder's lock (issue 25): the same trace as the locked path,
which takes over as soon as a call is made already (a frozen call, a retrieval), a cut is
counted or a call was dropped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from _calls import Calls

from aeval.trace import (
    Trace,
    TraceLimits,
    _context,
    httpx_event_hooks,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
)
from aeval.trace._context import Recorder
from aeval.trace._entries import raw_trace

(ON_RESPONSE,) = httpx_event_hooks(sync=True)["response"]


def model_call(model: str) -> None:
    """A chat completion through the hooks, as a client hands it to them."""
    body = {"model": model, "choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 1}}
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json={"model": "x"})
    ON_RESPONSE(httpx.Response(200, content=orjson.dumps(body), request=request))


def tools_and_models(count: int) -> None:
    for index in range(count):
        record_tool_call("lookup", {"i": index}, result=f"r{index}")
        model_call(f"m{index}")


def models_only(count: int) -> None:
    for index in range(count):
        model_call(f"m{index}")


def with_a_made_model_call(count: int) -> None:
    tools_and_models(count)
    record_model_call(model="made", prompt_tokens=1, completion_tokens=1)


def with_a_retrieval(count: int) -> None:
    tools_and_models(count)
    record_retrieval(["a document"], query="docs")


def with_a_long_result(count: int) -> None:
    tools_and_models(count)
    record_tool_call("long", {"q": "x" * 5_000}, result="y" * 5_000)


SCENES: dict[str, Callable[[int], None]] = {
    "tools-and-models": tools_and_models,
    "models-only": models_only,
    "a-made-model-call": with_a_made_model_call,
    "a-retrieval": with_a_retrieval,
    "a-long-result": with_a_long_result,
}


def recorded(scene: str, count: int, max_events: int) -> Recorder:
    with recording(limits=TraceLimits(max_events=max_events)) as recorder:
        SCENES[scene](count)
    return recorder


def readout(trace: Trace | None) -> Any:
    assert trace is not None
    return (
        [(c.name, dict(c.arguments), c.result, c.truncated) for c in trace.tool_calls],
        [(c.model, c.prompt_tokens, c.completion_tokens) for c in trace.model_calls],
        [(r.query, len(r.documents)) for r in trace.retrievals],
        [type(event).__name__ for event in trace.events()],
        trace.truncated,
        trace.dropped,
        timeless(trace.to_dict()),
    )


def timeless(value: Any) -> Any:
    """``value`` without its clock readings (two recordings never share them)."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in {"started", "ended"}}
    if isinstance(value, list):
        return [timeless(item) for item in value]
    return value


@pytest.mark.parametrize("scene", SCENES)
@pytest.mark.parametrize(("count", "max_events"), [(1, 20), (3, 20), (4, 5), (6, 3)])
def test_a_snapshot_without_the_lock_is_the_one_the_locked_path_takes(
    scene: str, count: int, max_events: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = recorded(scene, count, max_events).snapshot()
    general = recorded(scene, count, max_events)
    with monkeypatch.context() as patched:
        patched.setattr(_context, "raw_trace", lambda *args: None)
        locked = general.snapshot()
    assert readout(quick) == readout(locked)


def test_raw_calls_only_take_the_path_without_the_lock_and_the_rest_the_locked_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Raw tool and model calls make their trace through ``raw_trace`` and run no more
    Python functions than these (counted with ``sys.setprofile``); a made call among them
    makes ``raw_trace`` give way to the locked path, and a drop skips it."""
    results: list[Trace | None] = []
    real = raw_trace

    def spy(*args: Any) -> Trace | None:
        results.append(real(*args))
        return results[-1]

    recorder = recorded("tools-and-models", 3, 20)
    with Calls() as profile:
        recorder.snapshot()
    names = profile.names
    assert names == ["snapshot", "raw_trace", "unmade_trace"]  # no dict made, no lock taken
    monkeypatch.setattr(_context, "raw_trace", spy)
    for scene, count, max_events, taken in [
        ("tools-and-models", 3, 20, [True]),
        ("models-only", 3, 20, [True]),
        ("a-made-model-call", 2, 20, [False]),
        ("a-retrieval", 2, 20, [False]),
        ("tools-and-models", 4, 5, []),
    ]:
        results.clear()
        assert recorded(scene, count, max_events).snapshot() is not None
        assert [result is not None for result in results] == taken, scene


def test_every_snapshot_holds_the_same_model_calls_whichever_path_made_them() -> None:
    recorder = recorded("tools-and-models", 2, 20)
    first = recorder.snapshot()
    assert first is not None
    made = first.model_calls
    record_model_call_into(recorder)
    second = recorder.snapshot()  # now mixed with a made call: the locked path
    assert second is not None and len(second.model_calls) == 3
    assert all(a is b for a, b in zip(made, second.model_calls[:2], strict=True))


def record_model_call_into(recorder: Recorder) -> None:
    with recording() as inner:
        record_model_call(model="late")
    recorder.absorb(inner)


def test_the_count_of_model_calls_skips_the_sorting_only_when_it_covers_every_entry() -> None:
    """``raw_trace`` puts every entry among the model calls only when the recorder's count
    of them (read before the entries) is as large as the entries: one entry more, a tool
    call the count does not cover, sends it through the loop that tells them apart."""
    recorder = recorded("tools-and-models", 2, 20)
    entries = sorted(recorder._events or ())
    assert recorder._received == 2 and len(entries) == 4
    for received in (0, 1, 2, 3):
        trace = raw_trace(entries, recorder.limits, recorder._memo(), received)
        assert trace is not None and [c.name for c in trace.tool_calls] == ["lookup"] * 2
        assert [c.model for c in trace.model_calls] == ["m0", "m1"]
    models = recorded("models-only", 3, 20)
    calls = sorted(models._events or ())
    trace = raw_trace(calls, models.limits, models._memo(), models._received)
    assert trace is not None and not trace.tool_calls
    assert [c.model for c in trace.model_calls] == ["m0", "m1", "m2"]
