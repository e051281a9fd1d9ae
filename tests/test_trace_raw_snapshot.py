"""A snapshot keeps raw calls (tool calls as recorded, model calls as received by the httpx
hooks) to make on first read (issue 25): the same trace as a recorder that makes it at once
(one with a redactor, here one that changes nothing), whatever else it holds (a made call, a
retrieval, a cut, a drop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from aeval.trace import (
    Recorder,
    Trace,
    TraceLimits,
    httpx_event_hooks,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
)

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


def recorded(
    scene: str, count: int, max_events: int, redact: Callable[[Any], Any] | None = None
) -> Recorder:
    with recording(limits=TraceLimits(max_events=max_events), redact=redact) as recorder:
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
def test_a_snapshot_made_on_first_read_is_the_one_made_at_once(
    scene: str, count: int, max_events: int
) -> None:
    quick = recorded(scene, count, max_events).snapshot()
    at_once = recorded(scene, count, max_events, lambda value: value).snapshot()
    assert readout(quick) == readout(at_once)


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
