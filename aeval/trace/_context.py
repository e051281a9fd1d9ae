"""The recorder of the sample being run, held in a context variable.

A context variable follows the sample into every task its function starts (asyncio copies
the context when a task is created; anyio's task groups too) and into worker threads that
run in a copy of the context (``anyio.to_thread.run_sync``, ``contextvars.copy_context().run``).
Calls made where no recording is active are ignored: they can never land in another
sample's trace.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from time import time_ns
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from ._bounds import DEFAULT_LIMITS, TraceLimits
from ._chat import chat_model_call
from ._entries import (
    IMMUTABLE,
    KEPT_BYTES,
    Entry,
    Event,
    Kept,
    Made,
    RawModelCall,
    RawToolCall,
    UnmadeModels,
    UnmadeTools,
    datetime_of,
    in_reply_order,
    kept_value,
    made_model,
    made_tool,
)
from ._values import (
    CallError,
    ModelCall,
    Retrieval,
    ToolCall,
    Trace,
    Unmade,
    UnmadeModelCalls,
    unmade_trace,
)

if TYPE_CHECKING:
    from .._exceptions import UnmockedToolCall

__all__ = [
    "CURRENT",
    "EMPTY_TRACE",
    "Pending",
    "RECORDER",
    "Recorder",
    "RecorderOptions",
    "SEQUENCE",
    "Tokens",
    "ToolSource",
    "started_at",
]

RECORDER: ContextVar[Recorder | None] = ContextVar("aeval.trace.recorder", default=None)
CURRENT: ContextVar[Trace | None] = ContextVar("aeval.trace.current", default=None)
Tokens = tuple[Token["Recorder | None"], "Token[Trace | None] | None"]
"""What :func:`activate` and :func:`make_current` set, for :func:`deactivate` to restore."""
SEQUENCE = itertools.count()
"""Start order across recorders (``next(SEQUENCE)``)."""
EMPTY_TRACE = Trace()
_NONE_MADE: Made = {}
"""What a recorder that holds no event points to as its calls made (never written: the first
event gives the recorder a dict of its own)."""


class ToolSource(Protocol):
    """Where ``@aeval.tool`` functions get their results when they are not called live:
    :class:`~aeval.trace.Fixtures`, or one sample's session of a :class:`~aeval.trace.Replay`.
    """

    def serve(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """The result of calling tool ``name`` with ``arguments``.

        Raises:
            UnmockedToolCall: There is nothing to serve for this call.
            Exception: The error a fixture or a recorded call asks for.
        """
        ...


Pending = tuple[int, float, datetime | None]
"""Where an event stands in start order, when it started (``time.time_ns()``), and the start
as given, when it was."""


def now() -> datetime:
    """The current time, in UTC."""
    return datetime.now(UTC)


def _nanoseconds(at: datetime) -> int:
    return round(at.timestamp() * 1_000_000) * 1000


class RecorderOptions(TypedDict, total=False):
    """How a :class:`Recorder` records, for what makes one (see its ``__init__``)."""

    limits: TraceLimits
    tools: ToolSource | None
    redact: Callable[[Any], Any] | None


class Recorder:
    """The mutable, thread-safe record of one (sample, repeat); see :func:`recording`.

    The recorder is the only writer of its events: one method per kind
    (:meth:`add_tool_call`, :meth:`add_model_call`, :meth:`add_retrieval`), each taking the
    recorder's lock, and :meth:`snapshot` reads them under the same lock, so tool calls
    recorded from worker threads while a snapshot is taken are never lost or seen half made.

    Recording a tool call is cheap: the recorder keeps a :class:`RawToolCall` (name,
    arguments, result, error, ``time.time_ns()`` at start and end). The frozen
    :class:`ToolCall`, its bounded values and its times are made once per call: when a
    :meth:`snapshot`'s trace is first read (or in :meth:`snapshot` itself, with a redactor),
    and every later snapshot holds the same values. What is recorded is what the call saw:
    the arguments are copied into a mapping of their own at call time, and any argument or
    result that is not an immutable scalar (a dict, a list, an object) is turned into bounded
    JSON-safe data right then, so mutating it after the call cannot change the trace.
    Immutable scalars (strings, numbers, booleans, ``None``) are bounded and redacted when the
    trace is made, with the same outcome.

    Attributes:
        limits: What is kept of each value.
        tools: Where ``@aeval.tool`` functions get their results; ``None`` calls them.
        unmocked: The first :class:`~aeval.UnmockedToolCall` raised in this recording, kept
            even when the function under test caught it, so the sample can still fail.
    """

    __slots__ = (
        "_after",
        "_dropped",
        "_events",
        "_in_reply",
        "_lock",
        "_made",
        "_notes",
        "_redact",
        "_truncated",
        "limits",
        "tools",
        "unmocked",
    )

    def __init__(
        self,
        limits: TraceLimits = DEFAULT_LIMITS,
        tools: ToolSource | None = None,
        redact: Callable[[Any], Any] | None = None,
    ) -> None:
        self.limits = limits
        self.tools = tools
        self.unmocked: UnmockedToolCall | None = None
        self._redact = redact
        self._lock = threading.Lock()
        # made with the first event: a sample that records nothing allocates neither
        self._events: list[Entry] | None = None
        self._made: Made = _NONE_MADE  # sequence -> its call, once made from a raw entry
        self._truncated = 0  # cuts of the events kept made (a raw call counts its own)
        self._dropped = 0
        self._after: set[int] | None = None  # sequences of the events added after the fact
        self._notes: dict[Any, Any] | None = None  # what routes remember per sample (see note)
        self._in_reply = False  # whether a tool call was recorded with its place in a reply

    def start(self, at: datetime | None = None) -> Pending:
        """Mark the start of an event: its place in start order and its time (now, or ``at``)."""
        if at is None:
            return next(SEQUENCE), time_ns(), None
        return next(SEQUENCE), _nanoseconds(at), at

    def keep(self, value: Any) -> tuple[Any, int]:
        """``value`` as JSON-safe data, redacted, then cut to the limits; and the cuts made.

        Redaction sees every text whole (objects already turned into their fields), so a
        secret is never half cut before it is looked for.
        """
        return kept_value(value, self.limits, self._redact)

    def add_tool_call(
        self,
        pending: Pending,
        name: str,
        arguments: Mapping[str, Any],
        *,
        result: Any = None,
        error: BaseException | CallError | str | None = None,
        mocked: bool = False,
        ended: datetime | None = None,
        reply: tuple[int, int] | None = None,
    ) -> None:
        """Keep one tool call that started at ``pending`` and ends now (or at ``ended``).

        ``reply`` is the model reply that issued the call and the call's place in it: the
        calls of one reply are in the trace in the reply's order (see :meth:`snapshot`).
        """
        ended_ns = time_ns() if ended is None else _nanoseconds(ended)
        owned: dict[str, Any] | Kept | None = None
        if type(arguments) is dict:
            for key, item in arguments.items():
                if type(key) is not str or type(item) not in IMMUTABLE:
                    break
            else:  # plain values: kept as they are, bounded when the trace is made
                owned = arguments.copy()
        if owned is None:
            owned = Kept(self.keep(arguments))
        if type(result) not in IMMUTABLE:
            result = Kept(self.keep(result))
        failure = None if error is None else _failure(error)
        raw = RawToolCall(name, owned, result, failure, mocked, ended_ns, ended, pending[2], reply)
        if reply is not None:
            self._in_reply = True
        self._keep(pending, raw)

    def add_model_call(self, pending: Pending, call: ModelCall | RawModelCall) -> None:
        """Keep one model call that started at ``pending``: made, or as the bodies received
        (parsed when the trace is first read; at once when they are over
        :data:`KEPT_BYTES`, so that a trace holds little until it is read)."""
        if type(call) is RawModelCall and len(call.body) + len(call.request) > KEPT_BYTES:
            call = chat_model_call(
                call.body, call.request, call.duration, datetime_of(pending[1]), self.limits
            )
        self._keep(pending, call)

    def add_retrieval(self, pending: Pending, retrieval: Retrieval) -> None:
        """Keep one retrieval that started at ``pending``."""
        self._keep(pending, retrieval)

    def _keep(self, pending: Pending, event: Event | RawToolCall | RawModelCall) -> None:
        with self._lock:
            events = self._events
            if events is None:
                events = self._events = []
                self._made = {}
            if len(events) < self.limits.max_events:
                events.append((pending[1], pending[0], event))
            else:
                self._dropped += 1

    def note(self, key: Any, value: Any) -> Any:
        """Remember ``value`` under ``key`` for this recording and return what ``key`` held
        (``None`` at first): what a route keeps across the calls of one sample, such as the
        tool calls of a conversation it has recorded already (thread-safe)."""
        with self._lock:
            if self._notes is None:
                self._notes = {}
            previous = self._notes.get(key)
            self._notes[key] = value
            return previous

    def seen_by_a_route(self, pending: Pending, ended: int | None, *, tool: bool) -> bool:
        """Whether a direct route recorded the call a report after the fact (an OpenTelemetry
        span that started at ``pending`` and ended at ``ended``, ``time.time_ns()``) stands
        for: a tool call (``tool``) or model call, not itself reported after the fact, that
        started within it. When none did, the report's event (sequence ``pending[0]``) is
        taken as one after the fact, for the next such question."""
        kinds: tuple[type, type] = (ToolCall, RawToolCall) if tool else (ModelCall, RawModelCall)
        start = pending[1]
        with self._lock:
            after = self._after
            if after is None:
                after = self._after = set()
            for started, sequence, held in self._events or ():
                if (
                    start <= started
                    and (ended is None or started <= ended)
                    and sequence not in after
                    and type(held) in kinds
                ):
                    return True
            after.add(pending[0])
        return False

    def note_unmocked(self, error: UnmockedToolCall) -> None:
        """Remember the first call that had nothing to serve."""
        with self._lock:
            if self.unmocked is None:
                self.unmocked = error

    def _state(self) -> tuple[list[Entry], Made, int, int]:
        """A copy of the events so far in start order (the tool calls of one model reply in
        its order), the calls made from them, the cuts and the drops (read together, under
        the lock)."""
        with self._lock:
            entries = list(self._events or ())
            made, truncated, dropped = self._made, self._truncated, self._dropped
            in_reply = self._in_reply
        entries.sort()  # by start, then sequence: never equal, the events never compared
        if in_reply:
            in_reply_order(entries)
        return entries, made, truncated, dropped

    def _made_events(self) -> tuple[list[tuple[float, int, Event]], int, int]:
        """Every event so far in start order with its raw calls made (once each), the cuts
        (those of the calls made here too) and the drops."""
        entries, made, truncated, dropped = self._state()
        events: list[tuple[float, int, Event]] = []
        for started, sequence, event in entries:
            if type(event) is RawToolCall:
                event = made_tool(made, event, started, sequence, self.limits, self._redact)
                truncated += event.truncated
            elif type(event) is RawModelCall:
                event = made_model(made, event, started, sequence, self.limits)
            events.append((started, sequence, event))  # type: ignore[arg-type]
        return events, truncated, dropped

    def absorb(self, other: Recorder) -> None:
        """Keep every event of ``other`` too, in their start order (an inner recording's,
        such as a watched call's inside a sample, so the sample's trace still holds them).

        The calls of one model reply keep the reply's order: each event takes the start key
        of the place it holds in ``other``'s trace, so sorting this recorder's events keeps
        them there (each call keeps its own ``started``)."""
        events, truncated, dropped = other._made_events()
        places = sorted((started, sequence) for started, sequence, _ in events)
        events = [(*place, event) for place, (_, _, event) in zip(places, events, strict=True)]
        with other._lock:
            unmocked = other.unmocked
        with self._lock:
            mine = self._events
            if mine is None:
                mine = self._events = []
                self._made = {}
            room = max(0, self.limits.max_events - len(mine))
            mine.extend(events[:room])
            self._dropped += dropped + max(0, len(events) - room)
            self._truncated += truncated
        if unmocked is not None:
            self.note_unmocked(unmocked)

    def snapshot(self) -> Trace | None:
        """The trace so far; ``None`` when nothing was recorded.

        Events are in start order, but for the tool calls one model reply issued together
        (recorded with their ``reply``), which are in the reply's order, in the places they
        took in start order: a framework that runs them at once starts them in any order.

        Without a redactor the frozen :class:`ToolCall` values (and the model calls kept as
        bodies) are made when the trace is first read; a trace made so is equal to one made
        at once, in every way it can be read. With one, everything is made (and redacted)
        here.
        """
        if self._events is None and not self._dropped:
            return None
        if self._redact is not None:
            return self._snapshot_now()
        entries, made, truncated, dropped = self._state()
        if not entries and not dropped:
            return None
        tool_calls: list[Entry] = []
        model_calls: list[Entry] = []
        retrievals: list[Retrieval] = []
        raw_tools = raw_models = False
        for entry in entries:
            kind = type(entry[2])
            if kind is RawToolCall:
                raw_tools = True
                tool_calls.append(entry)
            elif kind is ToolCall:
                tool_calls.append(entry)
            elif kind is RawModelCall:
                raw_models = True
                model_calls.append(entry)
            elif kind is ModelCall:
                model_calls.append(entry)
            else:
                retrievals.append(entry[2])  # type: ignore[arg-type]
        tools: Unmade | tuple[ToolCall, ...] = ()
        if raw_tools:
            tools = UnmadeTools((tool_calls, self.limits, made, truncated))
        elif tool_calls:
            tools = tuple([entry[2] for entry in tool_calls])  # type: ignore[misc]
        models: UnmadeModelCalls | tuple[ModelCall, ...] = ()
        if raw_models:
            models = UnmadeModels((model_calls, made, self.limits))
        elif model_calls:
            models = tuple([entry[2] for entry in model_calls])  # type: ignore[misc]
        return unmade_trace(tools, models, tuple(retrievals), truncated, dropped)

    def _snapshot_now(self) -> Trace | None:
        """:meth:`snapshot` with every value made (and redacted) at once."""
        events, truncated, dropped = self._made_events()
        if not events and not dropped:
            return None
        tool_calls: list[ToolCall] = []
        model_calls: list[ModelCall] = []
        retrievals: list[Retrieval] = []
        for _, _, event in events:
            if type(event) is ToolCall:
                tool_calls.append(event)
            elif type(event) is ModelCall:
                model_calls.append(event)
            else:
                retrievals.append(event)  # type: ignore[arg-type]
        return Trace(tuple(tool_calls), tuple(model_calls), tuple(retrievals), truncated, dropped)

    def trace(self) -> Trace:
        """The trace so far (empty when nothing was recorded)."""
        return self.snapshot() or EMPTY_TRACE


def started_at(pending: Pending) -> datetime:
    """When a pending call began."""
    return datetime_of(pending[1]) if pending[2] is None else pending[2]


def _failure(error: BaseException | CallError | str | None) -> CallError | None:
    if error is None or isinstance(error, CallError):
        return error
    if isinstance(error, str):
        return CallError("Error", error)
    return CallError.from_exception(error)
