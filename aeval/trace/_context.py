"""The recorder of the sample being run, held in a context variable.

A context variable follows the sample into every task its function starts (asyncio copies
the context when a task is created; anyio's task groups too) and into worker threads that
run in a copy of the context (``anyio.to_thread.run_sync``, ``contextvars.copy_context().run``).
Calls made where no recording is active are ignored: they can never land in another
sample's trace.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from time import time_ns
from typing import TYPE_CHECKING, Any, Protocol

from ._bounds import DEFAULT_LIMITS, TraceLimits
from ._entries import (
    IMMUTABLE,
    Entry,
    Event,
    Kept,
    Made,
    RawModelCall,
    RawToolCall,
    UnmadeModels,
    UnmadeTools,
    datetime_of,
    freeze,
    kept_value,
    made_model,
    plain_arguments,
    raw_trace,
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
_MAKING = threading.Lock()
"""Held while a recorder makes its lock or its list of events (once each, at most)."""


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


Pending = tuple[int, int, datetime | None]
"""Where an event stands in start order, when it started (``time.time_ns()``), and the start
as given, when it was."""
_ORDER = operator.itemgetter(0, 1)  # (started ns, sequence)


def now() -> datetime:
    """The current time, in UTC."""
    return datetime.now(UTC)


def _nanoseconds(at: datetime) -> int:
    return round(at.timestamp() * 1_000_000) * 1000


class Recorder:
    """The mutable, thread-safe record of one (sample, repeat); see :func:`recording`.

    Recording a tool call is cheap: the recorder keeps a raw entry (name, arguments, result,
    error, ``time.time_ns()`` at start and end). The frozen :class:`ToolCall`, its bounded
    values and its times are made once per call: when a :meth:`snapshot`'s trace is first
    read (or in :meth:`snapshot` itself, with a redactor), and every later snapshot holds the
    same values. What is recorded is what the call saw: the arguments are copied into a
    mapping of their own at call time, and any argument or result that is not an immutable
    scalar (a dict, a list, an object) is turned into bounded JSON-safe data right then, so
    mutating it after the call cannot change the trace. Immutable scalars (strings, numbers,
    booleans, ``None``) are bounded and redacted when the trace is made, with the same
    outcome.

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
        "_lock",
        "_made",
        "_mixed",
        "_notes",
        "_received",
        "_redact",
        "_truncated",
        "limits",
        "tools",
        "unmocked",
    )

    def __init__(
        self,
        *,
        limits: TraceLimits = DEFAULT_LIMITS,
        tools: ToolSource | None = None,
        redact: Callable[[Any], Any] | None = None,
    ) -> None:
        self.limits = limits
        self.tools = tools
        self.unmocked: UnmockedToolCall | None = None
        self._redact = redact
        self._lock: threading.Lock | None = None  # made on first use (see _locked)
        # made on first use (see _list, _memo): a sample that records nothing allocates
        # neither, which keeps the cycle collector's young generation small
        self._events: list[Entry] | None = None
        self._made: Made | None = None  # sequence -> its call, once made from a raw entry
        self._mixed = False  # whether the events hold more than raw tool calls
        self._received = 0  # raw model calls kept, each counted after its entry (see received)
        self._truncated = 0
        self._dropped = 0
        self._after: set[int] | None = None  # sequences of the events added after the fact
        self._notes: dict[Any, Any] | None = None  # what routes remember per sample (see note)

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

    def add(self, pending: Pending, event: ToolCall | ModelCall | Retrieval) -> None:
        """Keep ``event``, which started at ``pending`` (thread-safe)."""
        cuts = event.truncated if isinstance(event, ToolCall) else 0
        with self._locked():
            events = self._list()
            if len(events) >= self.limits.max_events:
                self._dropped += 1
                return
            self._mixed = True  # before the entry: a snapshot that sees it knows it is mixed
            events.append((pending[1], pending[0], event))
            self._truncated += cuts

    def note(self, key: Any, value: Any) -> Any:
        """Remember ``value`` under ``key`` for this recording and return what ``key`` held
        (``None`` at first): what a route keeps across the calls of one sample, such as the
        tool calls of a conversation it has recorded already (thread-safe)."""
        with self._locked():
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
        kind: type = ToolCall if tool else ModelCall
        size = 8 if tool else 3
        start = pending[1]
        with self._locked():
            after = self._after
            if after is None:
                after = self._after = set()
            for started, sequence, held in self._list():
                if (
                    start <= started
                    and (ended is None or started <= ended)
                    and sequence not in after
                    and (type(held) is kind or (type(held) is tuple and len(held) == size))
                ):
                    return True
            after.add(pending[0])
        return False

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
    ) -> None:
        """Keep one tool call that started at ``pending`` and ends now (or at ``ended``)."""
        self.tool_call(
            pending,
            name,
            dict(arguments) if type(arguments) is dict else arguments,
            result,
            error,
            mocked,
            ended,
        )

    def tool_call(
        self,
        pending: Pending,
        name: str,
        arguments: Mapping[str, Any],
        result: Any,
        error: BaseException | CallError | str | None,
        mocked: bool,
        ended: datetime | None = None,
    ) -> None:
        """:meth:`add_tool_call` for a mapping of arguments the recorder may keep as it is
        (``@aeval.tool`` builds a new one per call), without keyword arguments' cost."""
        ended_ns = time_ns() if ended is None else _nanoseconds(ended)
        owned: dict[str, Any] | Kept
        if type(arguments) is dict and plain_arguments(arguments):
            owned = arguments
        else:
            owned = Kept(self.keep(arguments))
        if type(result) not in IMMUTABLE:
            result = Kept(self.keep(result))
        raw: RawToolCall = (
            name,
            owned,
            result,
            None if error is None else _failure(error),
            mocked,
            ended_ns,
            ended,
            pending[2],
        )
        events = self._events
        if events is None:
            events = self._list()
        if len(events) < self.limits.max_events:
            events.append((pending[1], pending[0], raw))  # atomic: _settled() trims a race
        else:
            with self._locked():
                self._dropped += 1

    def called(
        self,
        sequence: int,
        started: int,
        name: str,
        arguments: dict[str, Any],
        result: Any,
        ended: int,
    ) -> None:
        """:meth:`tool_call` for a call that returned, live, from ``started`` to ``ended``
        (``time.time_ns()``), with ``arguments`` under string keys the recorder may keep:
        ``@aeval.tool``'s path (which appends the entry itself when it can, see
        :data:`IMMUTABLE`)."""
        for item in arguments.values():
            if type(item) not in IMMUTABLE:
                arguments = Kept(self.keep(arguments))  # type: ignore[assignment]
                break
        if type(result) not in IMMUTABLE:
            result = Kept(self.keep(result))
        events = self._events
        if events is None:
            events = self._list()
        if len(events) < self.limits.max_events:
            raw = (name, arguments, result, None, False, ended, None, None)
            events.append((started, sequence, raw))
        else:
            with self._locked():
                self._dropped += 1

    def received(self, started: float, raw: RawModelCall, at_once: bool) -> None:
        """Keep a model call that started at ``started`` (``time.time_ns()``) and ended now as
        ``raw``, made when the trace is first read (at once when ``at_once``).

        Writers of a raw model call mark the recorder mixed before its entry and count it in
        ``_received`` after, so that a snapshot without the lock knows from the count alone
        when its entries are model calls only (see :func:`raw_trace`).
        """
        events = self._events
        if events is None:
            events = self._list()
        if len(events) < self.limits.max_events:
            sequence = next(SEQUENCE)
            self._mixed = True  # before the entry: a snapshot that sees it knows it is mixed
            if at_once:
                events.append((started, sequence, self._model(raw, started, sequence)))
            else:
                events.append((started, sequence, raw))
                self._received += 1
        else:
            with self._locked():
                self._dropped += 1

    def _model(self, raw: RawModelCall, started: float, sequence: int) -> ModelCall:
        return made_model(self._memo(), raw, started, sequence, self.limits)

    def _locked(self) -> threading.Lock:
        """This recorder's lock, made on first use: most recordings never need one."""
        if self._lock is None:
            with _MAKING:
                if self._lock is None:
                    self._lock = threading.Lock()
        return self._lock

    def _list(self) -> list[Entry]:
        """The list of events, made by the first one with the dict of the tool calls made
        from them, before it (writers that read ``_events`` directly take the way through
        here when it is ``None``)."""
        if self._events is None:
            with _MAKING:
                if self._events is None:
                    if self._made is None:
                        self._made = {}
                    self._events = []
        return self._events

    def _frozen(self, raw: RawToolCall, started: float, sequence: int) -> ToolCall:
        made = self._memo()
        call: ToolCall | None = made.get(sequence)
        if call is None:
            call = made.setdefault(sequence, freeze(raw, started, self.limits, self._redact))
        return call

    def _memo(self) -> Made:
        """The calls made so far by sequence, so every snapshot holds the same values (the
        dict made on first use)."""
        if self._made is None:
            with _MAKING:
                if self._made is None:
                    self._made = {}
        return self._made

    def _settled(self) -> tuple[list[tuple[float, int, Event]], int, int]:
        """Every event so far, the raw tool calls frozen once (in place), and the counts."""
        with self._locked():
            events = self._list()
            extra = len(events) - self.limits.max_events
            if extra > 0:
                del events[-extra:]
                self._dropped += extra
            for index, (started, sequence, event) in enumerate(events):
                if type(event) is not tuple:
                    continue
                self._mixed = True
                if len(event) == 3:
                    model = self._model(event, started, sequence)
                    events[index] = (started, sequence, model)
                else:
                    frozen = self._frozen(event, started, sequence)
                    events[index] = (started, sequence, frozen)
                    self._truncated += frozen.truncated
            settled: list[tuple[float, int, Event]] = list(events)  # type: ignore[arg-type]
            return settled, self._truncated, self._dropped

    def absorb(self, other: Recorder) -> None:
        """Keep every event of ``other`` too, in their start order (an inner recording's,
        such as a watched call's inside a sample, so the sample's trace still holds them)."""
        events, truncated, dropped = other._settled()
        with other._locked():
            unmocked = other.unmocked
        with self._locked():
            mine = self._list()
            room = max(0, self.limits.max_events - len(mine))
            self._mixed = self._mixed or bool(events[:room])  # before the entries (see add)
            mine.extend(events[:room])
            self._dropped += dropped + max(0, len(events) - room)
            self._truncated += truncated
        if unmocked is not None:
            self.note_unmocked(unmocked)

    def note_unmocked(self, error: UnmockedToolCall) -> None:
        """Remember the first call that had nothing to serve."""
        with self._locked():
            if self.unmocked is None:
                self.unmocked = error

    def snapshot(self) -> Trace | None:
        """The trace so far; ``None`` when nothing was recorded.

        Without a redactor the frozen :class:`ToolCall` values are made when the trace is
        first read (:class:`Unmade`); a trace made so is equal to one made at once, in every
        way it can be read.
        """
        events = self._events
        if not events:
            if not self._dropped:
                return None
        elif self._redact is None:
            received = self._received  # before the entries: each counted one is among them
            entries = sorted(events)  # one step: by start, then sequence (never equal)
            if not self._dropped and len(entries) <= self.limits.max_events:
                # nothing dropped or to trim: made without the lock (every writer of anything
                # but a raw tool call marks the recorder mixed before its entry, and a drop is
                # counted only when the list is full)
                made = self._made
                if made is None:  # never once an event is kept (see _list)
                    made = self._memo()
                if not self._mixed:  # raw tool calls only: the usual trace
                    return unmade_trace(
                        UnmadeTools((entries, self.limits, made, self._truncated)),
                        (),
                        (),
                        0,
                        0,
                    )
                if not self._truncated:  # no cut counted yet: raw calls only, as a rule
                    trace = raw_trace(entries, self.limits, made, received)
                    if trace is not None:
                        return trace
        if self._redact is not None:
            return self._snapshot_now()
        with self._lock or self._locked():
            events = self._events or self._list()
            extra = len(events) - self.limits.max_events
            if extra > 0:
                del events[-extra:]
                self._dropped += extra
            entries = sorted(events)  # by start, then sequence: never equal, the rest unread
            truncated, dropped, mixed = self._truncated, self._dropped, self._mixed
            made = self._memo()
        if not mixed and entries:  # raw tool calls only: the usual trace
            unmade = UnmadeTools((entries, self.limits, made, truncated))
            return unmade_trace(unmade, (), (), 0, dropped)
        tool_calls: list[Entry] = []
        model_calls: list[Entry] = []
        retrievals: list[Retrieval] = []
        raw = raw_models = False
        for entry in entries:
            kind = type(entry[2])
            if kind is tuple:
                if len(entry[2]) == 3:  # type: ignore[arg-type]
                    raw_models = True
                    model_calls.append(entry)
                else:
                    raw = True
                    tool_calls.append(entry)
            elif kind is ToolCall:
                tool_calls.append(entry)
            elif kind is ModelCall:
                model_calls.append(entry)
            else:
                retrievals.append(entry[2])  # type: ignore[arg-type]
        if not entries and not dropped:
            return None
        calls: Unmade | tuple[ToolCall, ...] = ()
        if raw:
            calls = UnmadeTools((tool_calls, self.limits, made, truncated))
        elif tool_calls:
            calls = tuple([entry[2] for entry in tool_calls])  # type: ignore[misc]
        kept: UnmadeModelCalls | tuple[ModelCall, ...] = ()
        if raw_models:
            kept = UnmadeModels((model_calls, made, self.limits))
        elif model_calls:
            kept = tuple([entry[2] for entry in model_calls])  # type: ignore[misc]
        return unmade_trace(calls, kept, tuple(retrievals), truncated, dropped)

    def _snapshot_now(self) -> Trace | None:
        """:meth:`snapshot` with every value made at once."""
        events, truncated, dropped = self._settled()
        if not events and not dropped:
            return None
        events.sort(key=_ORDER)
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
