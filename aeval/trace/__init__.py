"""Traces: what one sample's run did (tool calls, model calls, retrievals), per sample.

Record with ``@aeval.tool``, :func:`record_tool_call`, :func:`record_retrieval`,
:func:`httpx_event_hooks`, aeval's own model clients, or OpenTelemetry GenAI spans
(:class:`aeval.trace.otel.TraceSpanProcessor`, in ``aeval-engine[otel]``). Inside a Scorer each
(sample, repeat) gets its own trace; :func:`capture` records one anywhere else (a pytest
test). :func:`current` is the trace of the sample being run or evaluated.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .._util._lazy import lazy_names as _lazy_names
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
_MACHINERY = "it is aeval's own machinery, not a user's concept"
_RETURNED = "it is a value aeval hands back; use it where it is returned, no import needed"

_DEPRECATED: dict[str, tuple[str, str]] = {
    "ToolError": (".._exceptions", _SECOND_HOME),
    "ToolTimeoutError": (".._exceptions", _SECOND_HOME),
    "UnmockedToolCall": (".._exceptions", _SECOND_HOME),
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
        "it is aeval's own type alias; a trace's events() are ToolCall, ModelCall and Retrieval",
    ),
}
"""Names that left ``__all__``: each still resolves for one release, with a
:class:`DeprecationWarning` saying what to use instead."""

__getattr__ = _lazy_names(globals(), {}, deprecated=_DEPRECATED)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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

for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith(__name__ + "._"):
        with contextlib.suppress(AttributeError, TypeError):
            _value.__module__ = __name__
del _name, _value
