"""A row's trace as the formats show it: one compact line per event (Markdown), or per event
a title, its input and its output (the HTML report's timeline). Values are cut, saying their
length; escaping is the caller's, as for every other field."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

import orjson

from ..trace import ModelCall, Retrieval, ToolCall, Trace
from ._header import truncated

__all__ = [
    "COMPACT_LENGTH",
    "EventView",
    "compact_lines",
    "event_views",
    "timeline_html",
    "trace_summary",
]

COMPACT_LENGTH = 200
"""Characters shown of each argument or result on a compact line."""

_TIMELINE_LENGTH = 1000


@dataclass(frozen=True, slots=True)
class EventView:
    """One event of a trace as the HTML timeline shows it.

    Attributes:
        title: ``tool get_weather · mocked · 0.012 s``.
        input_label: What ``input`` is: ``"Arguments"`` or ``"Query"``.
        input: The arguments (JSON), or a retrieval's query; empty when none.
        label: What ``output`` is: ``"Result"``, ``"Error"``, ``"Documents"`` or ``""``.
        output: The result (JSON), the error, or the documents, one a line.
    """

    title: str
    input_label: str
    input: str
    label: str
    output: str

    def parts(self) -> list[str]:
        """The five texts, in the order of the attributes (the HTML rows' JSON)."""
        return [self.title, self.input_label, self.input, self.label, self.output]


def _json(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        return orjson.dumps(value, option=option).decode()
    except TypeError:
        return repr(value)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _cut(values: int) -> str:
    return f"{_plural(values, 'value')} cut when recorded"


def _seconds(duration: float | None) -> list[str]:
    return [] if duration is None else [f"{duration:.3f} s"]


def trace_summary(trace: Trace) -> str:
    """``2 tool calls · 1 model call · 120 tokens``, and what was cut or dropped; a model
    call without token counts (a stream that did not ask for usage) is said, never counted
    as 0."""
    parts = [_plural(len(trace.tool_calls), "tool call")]
    if trace.model_calls:
        parts.append(_plural(len(trace.model_calls), "model call"))
        uncounted = sum(
            call.prompt_tokens is None or call.completion_tokens is None
            for call in trace.model_calls
        )
        if uncounted and trace.tokens:
            parts.append(f"at least {_plural(trace.tokens, 'token')}")
        elif trace.tokens:
            parts.append(_plural(trace.tokens, "token"))
        if uncounted:
            parts.append(f"{_plural(uncounted, 'model call')} without token counts")
    if trace.retrievals:
        parts.append(_plural(len(trace.retrievals), "retrieval"))
    if trace.truncated:
        parts.append(_cut(trace.truncated))
    if trace.dropped:
        parts.append(f"{_plural(trace.dropped, 'more event')} not kept")
    return " · ".join(parts)


def _model_title(call: ModelCall) -> str:
    parts = [f"model {call.model or 'unknown'}"]
    if call.prompt_tokens is not None or call.completion_tokens is not None:
        parts.append(_plural(call.total_tokens, "token"))
    parts += _seconds(call.duration)
    if call.requested_tools:
        parts.append(f"asked for {', '.join(call.requested_tools)}")
    return " · ".join(parts)


def _tool_title(call: ToolCall) -> str:
    parts = [f"tool {call.name}"]
    if call.mocked:
        parts.append("mocked")
    parts += _seconds(call.duration)
    if call.truncated:
        parts.append(_cut(call.truncated))
    return " · ".join(parts)


def _documents(retrieval: Retrieval) -> str:
    lines = []
    for document in retrieval.documents:
        head = document.id or "(no id)"
        if document.score is not None:
            head += f" ({document.score:g})"
        lines.append(f"{head}: {document.text}" if document.text is not None else head)
    return "\n".join(lines)


def event_views(trace: Trace, *, limit: int = _TIMELINE_LENGTH) -> list[EventView]:
    """Every event of ``trace`` in start order, each value cut at ``limit`` characters."""

    def cut(text: str) -> str:
        return truncated(text, limit)

    views = []
    for event in trace.events():
        if isinstance(event, ToolCall):
            title = _tool_title(event)
            arguments = cut(_json(dict(event.arguments), indent=True)) if event.arguments else ""
            if event.error is not None:
                error = cut(str(event.error))
                views.append(EventView(title, "Arguments", arguments, "Error", error))
            else:
                result = cut(_json(event.result, indent=True))
                views.append(EventView(title, "Arguments", arguments, "Result", result))
        elif isinstance(event, ModelCall):
            views.append(EventView(_model_title(event), "", "", "", ""))
        else:
            count = _plural(len(event.documents), "document")
            query = "" if event.query is None else cut(event.query)
            views.append(
                EventView(
                    f"retrieval · {count}", "Query", query, "Documents", cut(_documents(event))
                )
            )
    return views


def compact_lines(trace: Trace, *, limit: int = COMPACT_LENGTH) -> list[str]:
    """One line per event (not yet escaped): ``tool get_weather(city="Mysore") -> "sunny"``."""
    lines = []
    for event in trace.events():
        if isinstance(event, ToolCall):
            arguments = ", ".join(
                f"{key}={truncated(_json(value), limit)}" for key, value in event.arguments.items()
            )
            if event.error is not None:
                outcome = f"raised {truncated(str(event.error), limit)}"
            else:
                outcome = f"-> {truncated(_json(event.result), limit)}"
            mocked = " (mocked)" if event.mocked else ""
            lines.append(f"tool {event.name}({arguments}) {outcome}{mocked}")
        elif isinstance(event, ModelCall):
            lines.append(_model_title(event))
        else:
            ids = ", ".join(d.id or "(no id)" for d in event.documents[:10])
            more = f", … {len(event.documents) - 10} more" if len(event.documents) > 10 else ""
            query = "" if event.query is None else f" for {truncated(_json(event.query), limit)}"
            lines.append(
                f"retrieval{query}: {_plural(len(event.documents), 'document')}"
                f"{f' ({ids}{more})' if ids else ''}"
            )
    return lines


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def timeline_html(trace: Trace) -> str:
    """The trace as the HTML report's collapsed timeline: an ordered list of its events, each
    value (cut by :func:`event_views`) escaped in a ``<pre>``."""
    events = []
    for view in event_views(trace):
        parts = [f"<p>{escape(view.title)}</p>"]
        if view.input:
            parts.append(f'<p class="muted">{view.input_label}</p>{_pre(view.input)}')
        if view.label:
            parts.append(f'<p class="muted">{view.label}</p>{_pre(view.output)}')
        events.append(f"<li>{''.join(parts)}</li>")
    return (
        f"<details><summary>{escape(trace_summary(trace))}</summary>"
        f'<ol class="trace">{"".join(events)}</ol></details>'
    )
