"""What a recorder keeps of each event until its trace is read, and how it is made then.

A tool call is kept as a raw tuple of what the call saw (:data:`RawToolCall`, 8 items) and
a model call as the bodies received (:data:`RawModelCall`, 3 items); the frozen values are
made once, on first read, and every later snapshot holds the same ones.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from ._bounds import TraceLimits, bounded, flat, plain
from ._chat import chat_model_call
from ._values import (
    CallError,
    ModelCall,
    Retrieval,
    ToolCall,
    Trace,
    Unmade,
    UnmadeModelCalls,
    frozen_tool_call,
    unmade_trace,
)

__all__ = [
    "Entry",
    "Event",
    "IMMUTABLE",
    "Kept",
    "Made",
    "RawModelCall",
    "RawToolCall",
    "UnmadeModels",
    "UnmadeTools",
    "datetime_of",
    "freeze",
    "kept_value",
    "made_model",
    "plain_arguments",
    "raw_trace",
]

IMMUTABLE = frozenset((str, int, float, bool, type(None)))
"""The types of the values a recorder keeps as they are until its trace is made."""
_fromtimestamp = datetime.fromtimestamp


def datetime_of(nanoseconds: float) -> datetime:
    return _fromtimestamp(nanoseconds / 1e9, UTC)


class Kept:
    """A value already made JSON-safe, redacted and bounded (``Recorder.keep``) at call time."""

    __slots__ = ("cuts", "value")

    def __init__(self, kept: tuple[Any, int]) -> None:
        self.value, self.cuts = kept


RawModelCall = tuple[bytes, bytes, "float | None"]
"""A chat completion as received: the response's body, the request's body, and the seconds
from request to response; :func:`made_model` parses it when the trace is first read."""
RawToolCall = tuple[
    str,  # name
    "dict[str, Any] | Kept",  # arguments: a flat dict the recorder owns, or kept already
    Any,  # result: an immutable scalar, or kept already
    "CallError | None",
    bool,  # mocked
    int,  # ended, time.time_ns()
    "datetime | None",  # ended as given
    "datetime | None",  # started as given
]
Event = ToolCall | ModelCall | Retrieval
Entry = tuple[float, int, "Event | RawToolCall | RawModelCall"]
"""(started, sequence, event): the start in ``time.time_ns()`` nanoseconds, an int, or a float
for a model call the hooks received (its start is the clock less its duration); the place
in start order; the event, made or raw (a tuple: of 8 items a tool call, of 3 a model call)."""
Made = dict[int, Any]
"""The calls made from raw entries, by sequence (tool and model calls alike)."""


def freeze(
    raw: RawToolCall, started: float, limits: TraceLimits, redact: Callable[[Any], Any] | None
) -> ToolCall:
    """The frozen :class:`ToolCall` of a raw entry: its values bounded (and redacted)."""
    name, arguments, result, failure, mocked, ended, ended_at, started_at = raw
    if isinstance(arguments, Kept):
        kept_arguments, cuts = arguments.value, arguments.cuts
    elif redact is None and len(arguments) <= limits.max_items and flat(arguments, limits.max_text):
        kept_arguments, cuts = arguments, 0  # plain values, in a mapping the recorder owns
    else:
        kept_arguments, cuts = kept_value(arguments, limits, redact)
    if type(result) is Kept:
        result, more = result.value, result.cuts
    elif result is None or (redact is None and plain(result, limits)):
        more = 0
    else:
        result, more = kept_value(result, limits, redact)
    if failure is not None and redact is not None:
        failure = CallError(failure.type, str(redact(failure.message)))
    return frozen_tool_call(
        name,
        MappingProxyType(kept_arguments),
        result,
        failure,
        _fromtimestamp(started / 1e9, UTC) if started_at is None else started_at,
        _fromtimestamp(ended / 1e9, UTC) if ended_at is None else ended_at,
        mocked,
        cuts + more,
    )


def kept_value(
    value: Any, limits: TraceLimits, redact: Callable[[Any], Any] | None
) -> tuple[Any, int]:
    if redact is None:
        return bounded(value, limits)
    whole = dataclasses.replace(limits, max_text=sys.maxsize)
    safe, shaped = bounded(value, whole)
    kept, cut = bounded(redact(safe), limits)
    return kept, shaped + cut


class UnmadeTools(tuple[list[Entry], TraceLimits, Made, int], Unmade):
    """A recorder's tool calls in start order, raw or made, to make on first read: the
    entries, the limits, the calls made so far by sequence, and the cuts counted already
    (a tuple, made without a Python call)."""

    __slots__ = ()

    def make(self) -> tuple[tuple[ToolCall, ...], int]:
        entries, limits, made, truncated = self
        calls: list[ToolCall] = []
        for started, sequence, event in entries:
            if type(event) is tuple:
                call = made.get(sequence)
                if call is None:
                    call = made.setdefault(sequence, freeze(event, started, limits, None))  # type: ignore[arg-type]
                truncated += call.truncated
                calls.append(call)
            else:
                calls.append(event)  # type: ignore[arg-type]
        return tuple(calls), truncated


class UnmadeModels(tuple[list[Entry], Made, TraceLimits], UnmadeModelCalls):
    """A recorder's model calls in start order, raw or made, to make on first read: the
    entries, the calls made so far by sequence and the limits that bound what a call keeps
    (a tuple, made without a Python call)."""

    __slots__ = ()

    def make(self) -> tuple[ModelCall, ...]:
        entries, made, limits = self
        return tuple(
            event
            if type(event) is ModelCall
            else made_model(made, event, started, sequence, limits)  # type: ignore[arg-type]
            for started, sequence, event in entries
        )


def made_model(
    made: Made, raw: RawModelCall, started: float, sequence: int, limits: TraceLimits
) -> ModelCall:
    """The model call of ``raw``, made once: every snapshot holds the same value."""
    call: ModelCall | None = made.get(sequence)
    if call is None:
        body, request, duration = raw
        call = chat_model_call(body, request, duration, datetime_of(started), limits)
        call = made.setdefault(sequence, call)
    return call


def plain_arguments(arguments: dict[Any, Any]) -> bool:
    """Whether a copied mapping of arguments holds only immutable scalars under string keys:
    kept as it is until the trace is read, when it is bounded."""
    for key, item in arguments.items():
        if type(key) is not str or type(item) not in IMMUTABLE:
            return False
    return True


def raw_trace(entries: list[Entry], limits: TraceLimits, made: Made, received: int) -> Trace | None:
    """The trace of ``entries`` (in start order) when every one is raw, as the calls were
    recorded, with ``made`` where their calls are made; ``None`` when one is made already (a
    frozen call, a retrieval), whose cuts only a locked snapshot counts right.

    ``received`` is how many raw model calls the recorder counted before ``entries`` were
    read: each is among them (the hooks count a call after its entry), so when they are as
    many as the entries, the entries are model calls only.
    """
    if received == len(entries):
        return unmade_trace((), UnmadeModels((entries, made, limits)), (), 0, 0)
    tool_calls: list[Entry] = []
    model_calls: list[Entry] = []
    for entry in entries:
        event = entry[2]
        if type(event) is not tuple:
            return None
        if len(event) == 3:
            model_calls.append(entry)
        else:
            tool_calls.append(entry)
    return unmade_trace(
        UnmadeTools((tool_calls, limits, made, 0)) if tool_calls else (),
        UnmadeModels((model_calls, made, limits)) if model_calls else (),
        (),
        0,
        0,
    )
