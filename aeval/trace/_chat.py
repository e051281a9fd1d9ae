"""What the bodies of an OpenAI-compatible chat completion say: the model, the tokens, the
tools the model asked to call, and whether the request asked for a stream."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import orjson

from ._bounds import DEFAULT_LIMITS, TraceLimits, cut_text
from ._values import ModelCall, frozen_model_call

__all__ = [
    "bounded_model_fields",
    "chat_model_call",
    "named_tool_calls",
    "requested_model",
    "requested_tools",
]

_MAPPINGS = (dict, Mapping)  # a dict (what JSON gives) is told without the ABC's check


def requested_tools(data: Any) -> tuple[str, ...]:
    """The tool names a chat completion asks to call (``choices[].message.tool_calls``)."""
    names: list[str] = []
    choices = data.get("choices") if isinstance(data, _MAPPINGS) else None
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, _MAPPINGS) else None
        names.extend(name for _, name in named_tool_calls(message))
    return tuple(names)


def named_tool_calls(message: Any) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Each tool call of a chat message (or of a streamed chunk's ``delta``) that names its
    function, with that name (``tool_calls[].function.name``)."""
    calls = message.get("tool_calls") if isinstance(message, _MAPPINGS) else None
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, _MAPPINGS) else None
        name = function.get("name") if isinstance(function, _MAPPINGS) else None
        if isinstance(name, str) and name:
            yield call, name


def requested_model(content: bytes) -> tuple[str | None, bool]:
    """The model a request's body names and whether it asks for a stream."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None, False
    if not isinstance(body, _MAPPINGS):
        return None, False
    model = body.get("model")
    return (model if isinstance(model, str) else None), body.get("stream") is True


def chat_model_call(
    body: bytes,
    request: bytes,
    duration: float | None,
    started: datetime,
    limits: TraceLimits = DEFAULT_LIMITS,
) -> ModelCall:
    """The model call of a chat completion as received (never raises): the model the
    response reports (else the one the request named), the tokens it counts, the tools it
    asks for, within ``limits``; a body that is not JSON gives what the request says."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    usage = data.get("usage") if isinstance(data, _MAPPINGS) else None
    reported = data.get("model") if isinstance(data, _MAPPINGS) else None
    model, tools = bounded_model_fields(
        reported if isinstance(reported, str) else requested_model(request)[0],
        requested_tools(data),
        limits,
    )
    return frozen_model_call(
        model,
        _count(usage, "prompt_tokens"),
        _count(usage, "completion_tokens"),
        duration,
        tools,
        started,
    )


def bounded_model_fields(
    model: str | None, tools: tuple[str, ...], limits: TraceLimits
) -> tuple[str | None, tuple[str, ...]]:
    """A model call's name and requested tools within ``limits``: a name longer than
    ``max_text`` cut with a marker, and past ``max_items`` tools one marker saying how many
    more there were."""
    if model is not None and len(model) > limits.max_text:
        model = cut_text(model, limits.max_text)
    if len(tools) > limits.max_items or any(len(name) > limits.max_text for name in tools):
        kept = [
            name if len(name) <= limits.max_text else cut_text(name, limits.max_text)
            for name in tools[: limits.max_items]
        ]
        if len(tools) > limits.max_items:
            kept.append(f"… [{len(tools) - limits.max_items} more tools cut]")
        tools = tuple(kept)
    return model, tools


def _count(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, _MAPPINGS) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
