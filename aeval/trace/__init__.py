"""Traces: what one sample's run did (tool calls, model calls, retrievals), per sample.

Record with ``@aeval.tool``, :func:`record_tool_call`, :func:`record_retrieval`,
:func:`httpx_event_hooks`, aeval's own model clients, or OpenTelemetry GenAI spans
(:class:`aeval.trace.otel.TraceSpanProcessor`, in ``aeval-engine[otel]``). Inside a Scorer each
(sample, repeat) gets its own trace; :func:`capture` records one anywhere else (a pytest
test). :func:`current` is the trace of the sample being run or evaluated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import (
    MACHINERY as _MACHINERY,
    RETURNED as _RETURNED,
    deprecations as _deprecations,
    lazy_package as _lazy_package,
    type_alias as _type_alias,
)
from ._assertions import assert_trace
from ._bounds import TraceLimits
from ._capture import capture
from ._context import Recorder
from ._fixtures import Fixtures, Replay
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
from ._values import CallError, Document, ModelCall, Retrieval, ToolCall, Trace

if TYPE_CHECKING:
    from .._exceptions import (
        ToolError as ToolError,
        ToolTimeoutError as ToolTimeoutError,
        UnmockedToolCall as UnmockedToolCall,
    )
    from ._assertions import TraceAssert as TraceAssert
    from ._capture import Capture as Capture
    from ._context import ToolSource as ToolSource
    from ._fixtures import Fixture as Fixture, ReplaySession as ReplaySession
    from ._tool import tool as tool
    from ._values import TraceEvent as TraceEvent

_SECOND_HOME = "import it from aeval, where it lives (the same object)"

_DEPRECATED: dict[str, tuple[str, str]] = {
    **_deprecations(
        _SECOND_HOME, {".._exceptions": ("ToolError", "ToolTimeoutError", "UnmockedToolCall")}
    ),
    "tool": ("._tool", "use @aeval.tool (the same decorator)"),
    "TraceAssert": ("._assertions", _RETURNED),
    "Capture": ("._capture", _RETURNED),
    "ToolSource": ("._context", _MACHINERY),
    "Fixture": (
        "._fixtures",
        'give Fixtures each fixture as a mapping: {"arguments": ..., "result": ...} (or "error")',
    ),
    "ReplaySession": ("._fixtures", _MACHINERY),
    "TraceEvent": (
        "._values",
        _type_alias("a trace's events() are ToolCall, ModelCall and Retrieval"),
    ),
}

__all__ = [
    "CallError",
    "Document",
    "Fixtures",
    "ModelCall",
    "Recorder",
    "Replay",
    "Retrieval",
    "ToolCall",
    "Trace",
    "TraceLimits",
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
    "using",
]

__getattr__, __dir__ = _lazy_package(globals(), {}, deprecated=_DEPRECATED)
