"""OpenTelemetry GenAI spans into aeval traces (aeval-engine[otel]).

Add :class:`TraceSpanProcessor` to any SDK ``TracerProvider``; the tool and chat spans your
agent framework emits while a sample runs then land in that sample's trace. This module
needs only the OpenTelemetry API; without an SDK provider no span reaches it, so it does
nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .._exceptions import MissingExtraError

try:
    from opentelemetry.trace import StatusCode
except ImportError as exc:
    raise MissingExtraError(
        "aeval.trace.otel maps OpenTelemetry spans, and OpenTelemetry is not installed: "
        "pip install 'aeval-engine[otel]'"
    ) from exc

from .._exceptions import UnmockedToolCall
from ._chat import bounded_model_fields
from ._context import Recorder, started_at
from ._recording import current_recorder
from ._route import MODEL_CALL, TOOL_CALL
from ._values import CallError, ModelCall

__all__ = ["TraceSpanProcessor"]

_TOOL_OPERATIONS = frozenset({"execute_tool"})
_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})


def _time(nanoseconds: object) -> datetime | None:
    if isinstance(nanoseconds, int):
        return datetime.fromtimestamp(nanoseconds / 1e9, UTC)
    return None


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _requested_tools(attributes: Mapping[str, Any]) -> tuple[str, ...]:
    """The tools a chat span's model asked to call: the ``tool_call`` parts of the GenAI
    semantic conventions' ``gen_ai.output.messages`` (JSON), in their order."""
    messages = _decoded(attributes.get("gen_ai.output.messages"))
    names: list[str] = []
    for message in messages if isinstance(messages, list) else ():
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "tool_call":
                name = part.get("name")
                if isinstance(name, str) and name:
                    names.append(name)
    return tuple(names)


class TraceSpanProcessor:
    """Maps OpenTelemetry GenAI spans to tool and model calls of the sample that started them.

    A span whose ``gen_ai.operation.name`` is ``execute_tool``, or that has
    ``gen_ai.tool.name``, becomes a :class:`~aeval.trace.ToolCall`: arguments from
    ``gen_ai.tool.call.arguments`` (JSON), result from ``gen_ai.tool.call.result``, error
    from the span's status. A chat span (``chat``, ``text_completion``,
    ``generate_content``, or any span with ``gen_ai.request.model``) becomes a
    :class:`~aeval.trace.ModelCall` with ``gen_ai.usage.input_tokens`` and
    ``output_tokens`` and the tools the model asked for (the ``tool_call`` parts of
    ``gen_ai.output.messages``). The sample is the one running where the span *started* (a
    span may end elsewhere); spans started outside any sample are ignored.

    A call another route records (``@aeval.tool``, an ``aeval.integrations`` module, the httpx
    hooks) is kept once, as that route records it: a span that starts while that route's call
    is open is the same call, and so is a span within whose time a route's call of the same
    kind started. Spans report a tool call after it ran, so they cannot serve fixtures or a
    replay: under either, a tool call seen only by a span ran live, and the row is an error
    (:class:`~aeval.UnmockedToolCall`) rather than a silent live call.

    Example::

        provider = TracerProvider()
        provider.add_span_processor(TraceSpanProcessor())
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: dict[tuple[int, int], Recorder] = {}

    @staticmethod
    def _key(span: Any) -> tuple[int, int] | None:
        try:
            context = span.get_span_context()
            return int(context.trace_id), int(context.span_id)
        except Exception:
            return None

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Remember the sample running where ``span`` starts."""
        recorder = current_recorder()
        if recorder is None or MODEL_CALL.get() is not None:
            return
        call = TOOL_CALL.get()
        if call is not None and call.open:
            attributes: Mapping[str, Any] = getattr(span, "attributes", None) or {}
            if attributes.get("gen_ai.request.model") is None:
                call.open = False  # the route's own tool call, seen from inside
                return
        key = self._key(span)
        if key is not None:
            with self._lock:
                self._started[key] = recorder

    def _on_ending(self, span: Any) -> None:
        """Nothing to do before the span ends (the SDK calls this)."""

    def on_end(self, span: Any) -> None:
        """Record ``span`` in the trace of the sample it started in, if it is a GenAI span."""
        key = self._key(span)
        if key is None:
            return
        with self._lock:
            recorder = self._started.pop(key, None)
        if recorder is None:
            return
        attributes: Mapping[str, Any] = getattr(span, "attributes", None) or {}
        operation = attributes.get("gen_ai.operation.name")
        tool = attributes.get("gen_ai.tool.name")
        if operation in _TOOL_OPERATIONS or tool is not None:
            self._tool_call(recorder, span, attributes, str(tool or span.name))
        elif operation in _MODEL_OPERATIONS or "gen_ai.request.model" in attributes:
            self._model_call(recorder, span, attributes)

    @staticmethod
    def _pending(recorder: Recorder, span: Any) -> Any:
        return recorder.start(_time(getattr(span, "start_time", None)))

    def _tool_call(
        self, recorder: Recorder, span: Any, attributes: Mapping[str, Any], name: str
    ) -> None:
        arguments = _decoded(attributes.get("gen_ai.tool.call.arguments"))
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, Mapping):
            arguments = {"arguments": arguments}
        error = None
        status = getattr(span, "status", None)
        if status is not None and status.status_code is StatusCode.ERROR:
            kind = attributes.get("error.type")
            error = CallError(str(kind) if kind else "Error", status.description or "")
        pending = self._pending(recorder, span)
        end = getattr(span, "end_time", None)
        if recorder.seen_by_a_route(pending, end if isinstance(end, int) else None, tool=True):
            return
        recorder.add_tool_call(
            pending,
            name,
            arguments,
            result=_decoded(attributes.get("gen_ai.tool.call.result")),
            error=error,
            ended=_time(end),
        )
        if recorder.tools is not None:
            recorder.note_unmocked(
                UnmockedToolCall(
                    f"tool call {name} ran live under fixtures or a replay: it was seen only "
                    "by an OpenTelemetry span, which reports a call after it ran and cannot "
                    "serve it; record the framework's tools with its aeval.integrations "
                    "module or @aeval.tool so that fixtures and replays serve them",
                    tool=name,
                    arguments=arguments,
                )
            )

    def _model_call(self, recorder: Recorder, span: Any, attributes: Mapping[str, Any]) -> None:
        pending = self._pending(recorder, span)
        start, end = getattr(span, "start_time", None), getattr(span, "end_time", None)
        if recorder.seen_by_a_route(pending, end if isinstance(end, int) else None, tool=False):
            return
        duration = (end - start) / 1e9 if isinstance(start, int) and isinstance(end, int) else None
        model = attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model")
        name, tools = bounded_model_fields(
            None if model is None else str(model), _requested_tools(attributes), recorder.limits
        )
        recorder.add_model_call(
            pending,
            ModelCall(
                model=name,
                prompt_tokens=_count(attributes.get("gen_ai.usage.input_tokens")),
                completion_tokens=_count(attributes.get("gen_ai.usage.output_tokens")),
                duration=duration,
                requested_tools=tools,
                started=started_at(pending),
            ),
        )

    def shutdown(self) -> None:
        """Forget the spans still open."""
        with self._lock:
            self._started.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered: always done."""
        return True
