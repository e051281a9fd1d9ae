"""What a recorder keeps of each event until its trace is read, and how it is made then.

A tool call is kept as what the call saw (:class:`RawToolCall`) and a model call as the
bodies received (:class:`RawModelCall`); the frozen values are made once, on first read, and
every later snapshot holds the same ones.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NamedTuple

from ._bounds import TraceLimits, bounded, flat, plain
from ._chat import chat_model_call
from ._values import (
    CallError,
    ModelCall,
    Retrieval,
    ToolCall,
    Unmade,
    UnmadeModelCalls,
    frozen_tool_call,
)

__all__ = [
    "Entry",
    "Event",
    "IMMUTABLE",
    "KEPT_BYTES",
    "Kept",
    "Made",
    "RawModelCall",
    "RawToolCall",
    "UnmadeModels",
    "UnmadeTools",
    "datetime_of",
    "freeze",
    "in_reply_order",
    "kept_value",
    "made_model",
    "made_tool",
]

IMMUTABLE = frozenset((str, int, float, bool, type(None)))
"""The types of the values a recorder keeps as they are until its trace is made."""
KEPT_BYTES = 8192
"""The most bytes of bodies a model call keeps until its trace is read; larger ones are
parsed when they are recorded."""
_fromtimestamp = datetime.fromtimestamp


def datetime_of(nanoseconds: float) -> datetime:
    return _fromtimestamp(nanoseconds / 1e9, UTC)


class Kept:
    """A value already made JSON-safe, redacted and bounded (``Recorder.keep``) at call time."""

    __slots__ = ("cuts", "value")

    def __init__(self, kept: tuple[Any, int]) -> None:
        self.value, self.cuts = kept


class RawModelCall(NamedTuple):
    """A chat completion as received; :func:`made_model` parses it when the trace is first
    read."""

    body: bytes
    """The response's body."""
    request: bytes
    """The request's body."""
    duration: float | None
    """Seconds from request to response, when known."""


class RawToolCall(NamedTuple):
    """A tool call as recorded; :func:`freeze` makes its :class:`ToolCall` when the trace is
    first read."""

    name: str
    arguments: dict[str, Any] | Kept
    """A flat dict of immutable scalars the recorder owns, or the arguments kept already."""
    result: Any
    """An immutable scalar, or the result kept already."""
    error: CallError | None
    mocked: bool
    ended: int
    """``time.time_ns()``."""
    ended_at: datetime | None
    """The end as given, when it was."""
    started_at: datetime | None
    """The start as given, when it was."""
    reply: tuple[int, int] | None = None
    """The model reply that issued the call and the call's place in it, when known."""


Event = ToolCall | ModelCall | Retrieval
Entry = tuple[float, int, Event | RawToolCall | RawModelCall]
"""(started, sequence, event): the start in ``time.time_ns()`` nanoseconds, an int, or a float
for a model call the hooks received (its start is the clock less its duration); the place
in start order; the event, made or raw. Tuples sort by start, then by sequence, which is
never equal: the events are never compared."""
Made = dict[int, Any]
"""The calls made from raw entries, by sequence (tool and model calls alike)."""


def freeze(
    raw: RawToolCall, started: float, limits: TraceLimits, redact: Callable[[Any], Any] | None
) -> ToolCall:
    """The frozen :class:`ToolCall` of a raw entry: its values bounded (and redacted)."""
    name, arguments, result, failure, mocked, ended, ended_at, started_at, _ = raw
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


def in_reply_order(entries: list[Entry]) -> None:
    """Put the tool calls of each model reply (``RawToolCall.reply``) in the order the reply
    issued them, in the places they took in start order; every other event keeps its place.

    A framework runs the calls of one reply at once, so their start order is a race; the
    reply's order is the one the model gave.
    """
    places: dict[int, list[int]] = {}
    for position, (_, _, event) in enumerate(entries):
        if type(event) is RawToolCall and event.reply is not None:
            places.setdefault(event.reply[0], []).append(position)
    for positions in places.values():
        if len(positions) > 1:
            issued = sorted((entries[position] for position in positions), key=_place_in_reply)
            for position, entry in zip(positions, issued, strict=True):
                entries[position] = entry


def _place_in_reply(entry: Entry) -> int:
    return entry[2].reply[1]  # type: ignore[union-attr,index]


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
            if type(event) is RawToolCall:
                call = made_tool(made, event, started, sequence, limits, None)
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
            made_model(made, event, started, sequence, limits)
            if type(event) is RawModelCall
            else event  # type: ignore[misc]
            for started, sequence, event in entries
        )


def made_tool(
    made: Made,
    raw: RawToolCall,
    started: float,
    sequence: int,
    limits: TraceLimits,
    redact: Callable[[Any], Any] | None,
) -> ToolCall:
    """The tool call of ``raw``, made once: every snapshot holds the same value."""
    call: ToolCall | None = made.get(sequence)
    if call is None:
        call = made.setdefault(sequence, freeze(raw, started, limits, redact))
    return call


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
