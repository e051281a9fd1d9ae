"""Traces: what one sample's run did (tool calls, model calls, retrievals), per sample.

Record with ``@aeval.tool``, :func:`record_tool_call`, :func:`record_retrieval`,
:func:`httpx_event_hooks`, aeval's own model clients, or OpenTelemetry GenAI spans
(:class:`aeval.trace.otel.TraceSpanProcessor`, in ``aeval-engine[otel]``). Inside a Scorer each
(sample, repeat) gets its own trace; :func:`capture` records one anywhere else (a pytest
test). :func:`current` is the trace of the sample being run or evaluated.
"""

from __future__ import annotations

import contextlib

from .._exceptions import ToolError, ToolTimeoutError, UnmockedToolCall
from ._assertions import TraceAssert, assert_trace
from ._bounds import TraceLimits
from ._capture import Capture, capture
from ._context import Recorder, ToolSource
from ._fixtures import Fixture, Fixtures, Replay, ReplaySession
from ._httpx import httpx_event_hooks
from ._recording import (
    current,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
    using,
)
from ._render import redact_trace, render_trace
from ._tool import tool
from ._values import CallError, Document, ModelCall, Retrieval, ToolCall, Trace, TraceEvent

__all__ = [
    "CallError",
    "Capture",
    "Document",
    "Fixture",
    "Fixtures",
    "ModelCall",
    "Recorder",
    "Replay",
    "ReplaySession",
    "Retrieval",
    "ToolCall",
    "ToolError",
    "ToolSource",
    "ToolTimeoutError",
    "Trace",
    "TraceAssert",
    "TraceEvent",
    "TraceLimits",
    "UnmockedToolCall",
    "assert_trace",
    "capture",
    "current",
    "httpx_event_hooks",
    "record_model_call",
    "record_retrieval",
    "record_tool_call",
    "recording",
    "redact_trace",
    "render_trace",
    "tool",
    "using",
]

for _name in __all__:
    _value = globals()[_name]
    if _name != "tool" and getattr(_value, "__module__", "").startswith(__name__ + "._"):
        with contextlib.suppress(AttributeError, TypeError):
            _value.__module__ = __name__
del _name, _value
