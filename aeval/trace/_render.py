"""A trace as compact text (for a judge's prompt), and a trace with its secrets redacted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ._bounds import cut_text
from ._values import CallError, Document, ModelCall, Retrieval, ToolCall, Trace

__all__ = ["EMPTY_TRACE_TEXT", "redact_trace", "render_trace"]

EMPTY_TRACE_TEXT = "(no tool calls, model calls or retrievals were recorded)"
_SHOWN = 300


def _json(value: Any, limit: int) -> str:
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else cut_text(text, limit)


def _line(event: ToolCall | ModelCall | Retrieval, limit: int) -> str:
    if isinstance(event, ToolCall):
        arguments = ", ".join(
            f"{key}={_json(value, limit)}" for key, value in event.arguments.items()
        )
        outcome = (
            f"raised {event.error}"
            if event.error is not None
            else f"-> {_json(event.result, limit)}"
        )
        mocked = " [mocked]" if event.mocked else ""
        return f"tool {event.name}({arguments}) {outcome}{mocked}"
    if isinstance(event, ModelCall):
        tokens = f", {event.total_tokens} tokens" if event.prompt_tokens is not None else ""
        asked = f", asked for {', '.join(event.requested_tools)}" if event.requested_tools else ""
        return f"model {event.model or 'unknown'}{tokens}{asked}"
    ids = [document.id or _json(document.text, 60) for document in event.documents]
    query = f" for {_json(event.query, limit)}" if event.query is not None else ""
    return f"retrieval{query}: {len(event.documents)} documents ({', '.join(ids[:10])})"


def render_trace(trace: Trace | None, *, limit: int = _SHOWN) -> str:
    """One line per event, in start order; ``EMPTY_TRACE_TEXT`` for no trace or an empty one.

    Args:
        trace: The trace.
        limit: Characters shown of each argument or result (the rest is cut, saying so).
    """
    if not trace:
        return EMPTY_TRACE_TEXT
    lines = [f"{index}. {_line(event, limit)}" for index, event in enumerate(trace.events(), 1)]
    if trace.dropped:
        lines.append(f"({trace.dropped} more events were not kept)")
    return "\n".join(lines)


def redact_trace(trace: Trace, redact: Callable[[Any], Any]) -> Trace:
    """``trace`` with ``redact`` applied to every argument, result, error message, query and
    document text.

    Args:
        trace: The trace to copy.
        redact: Called with each value (an argument mapping, a result, a text) and returns
            it with its secrets replaced; it must handle strings, lists, tuples and dicts
            (the values a trace keeps).

    Example:
        >>> from aeval.trace import ToolCall, Trace, redact_trace
        >>> call = ToolCall("login", {"password": "hunter2"}, "ok", None, 0.0, 0.0)
        >>> def hide(value):
        ...     if isinstance(value, dict):
        ...         return {key: hide(item) for key, item in value.items()}
        ...     return "[redacted]" if value == "hunter2" else value
        >>> redact_trace(Trace(tool_calls=(call,)), hide).tool_calls[0].arguments["password"]
        '[redacted]'
    """

    def error(value: CallError | None) -> CallError | None:
        return None if value is None else CallError(value.type, str(redact(value.message)))

    def text(value: str | None) -> str | None:
        return None if value is None else str(redact(value))

    tool_calls = tuple(
        ToolCall(
            call.name,
            redact(dict(call.arguments)),
            redact(call.result),
            error(call.error),
            call.started,
            call.ended,
            call.mocked,
            call.truncated,
        )
        for call in trace.tool_calls
    )
    retrievals = tuple(
        Retrieval(
            text(retrieval.query),
            tuple(Document(d.id, text(d.text), d.score) for d in retrieval.documents),
            retrieval.started,
        )
        for retrieval in trace.retrievals
    )
    return Trace(tool_calls, trace.model_calls, retrievals, trace.truncated, trace.dropped)
