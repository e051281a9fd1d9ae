"""Optional OpenTelemetry: each result as a ``gen_ai.evaluation.result`` event (aeval-engine[otel]).

This module imports ``opentelemetry`` (the API only); the evaluator imports this module only
when OpenTelemetry is installed, so nothing is imported without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context, trace

from .._reporting._results import EvaluationRow
from .._version import __version__

__all__ = ["EVENT_NAME", "SPAN_NAME", "Telemetry", "event_attributes"]

EVENT_NAME = "gen_ai.evaluation.result"
SPAN_NAME = "aeval.online.evaluation"


def event_attributes(row: EvaluationRow) -> dict[str, Any]:
    """The attributes of one row's event (OpenTelemetry's GenAI evaluation conventions)."""
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": row.strategy or "",
        "gen_ai.evaluation.score.label": row.outcome.value,
    }
    if row.score is not None:
        attributes["gen_ai.evaluation.score.value"] = row.score
    if row.explanation is not None:
        attributes["gen_ai.evaluation.explanation"] = row.explanation
    if row.error is not None:
        attributes["error.type"] = row.error.type
    return attributes


class Telemetry:
    """Captures the current span when a response is submitted, and reports its results there.

    When the span is still recording once the evaluation ends, the events are added to it.
    Usually it has ended by then (the request was answered long before the judge replied):
    the events then go on a short span, ``aeval.online.evaluation``, whose parent is the
    captured span, so they sit in the same trace, under the request.
    """

    def __init__(self) -> None:
        self._tracer = trace.get_tracer("aeval.online", __version__)
        self.context: Callable[[], Any] = _context_reader()
        """The current OpenTelemetry context; an empty one means nothing is traced (then
        :meth:`capture` answers ``None``, and a caller may skip it)."""

    def capture(self) -> Any:
        """The current span when one is being traced, else ``None`` (nothing to report to).

        An empty OpenTelemetry context (no span, nothing attached: a service that is not
        traced) is answered without looking further: this runs on every submitted response.
        """
        context = self.context()
        if not context:
            return None
        span = trace.get_current_span(context)
        return span if span.get_span_context().is_valid else None

    def emit(self, span: Any, rows: Sequence[EvaluationRow], response: str) -> None:
        """Report ``rows`` on ``span`` (see the class docstring)."""
        if span.is_recording():
            for row in rows:
                span.add_event(EVENT_NAME, event_attributes(row))
            return
        context = trace.set_span_in_context(trace.NonRecordingSpan(span.get_span_context()))
        child = self._tracer.start_span(
            SPAN_NAME, context=context, attributes={"aeval.response.name": response}
        )
        try:
            for row in rows:
                child.add_event(EVENT_NAME, event_attributes(row))
        finally:
            child.end()


def _context_reader() -> Callable[[], Any]:
    """``opentelemetry.context.get_current``, or the ``ContextVar.get`` it ends in when the
    runtime context is the default one (``contextvars``): the same answer without two Python
    calls per submitted response."""
    variable = getattr(getattr(otel_context, "_RUNTIME_CONTEXT", None), "_current_context", None)
    if isinstance(variable, ContextVar):
        return variable.get
    return otel_context.get_current
