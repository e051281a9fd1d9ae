"""The values of a trace: what one sample's run did, frozen once the sample is done."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

__all__ = [
    "CallError",
    "Document",
    "ModelCall",
    "Retrieval",
    "ToolCall",
    "Trace",
    "TraceEvent",
    "Unmade",
    "UnmadeModelCalls",
    "frozen_model_call",
    "frozen_tool_call",
    "unmade_trace",
]

_NO_ARGUMENTS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CallError:
    """An exception a tool call raised, kept as data.

    Attributes:
        type: The exception's class name (``TimeoutError``).
        message: Its message.
    """

    type: str
    message: str

    @classmethod
    def from_exception(cls, exc: BaseException) -> CallError:
        """The class name and message of ``exc`` (never raises)."""
        try:
            message = str(exc)
        except Exception:
            message = f"<{type(exc).__name__} whose message cannot be read>"
        return cls(type(exc).__name__, message)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool.

    Attributes:
        name: The tool's name.
        arguments: The arguments by parameter name (JSON-safe, bounded).
        result: What the tool returned (JSON-safe, bounded); ``None`` when it raised.
        error: What it raised, or ``None``.
        started: When the call began (UTC).
        ended: When it returned or raised (UTC).
        mocked: The result came from fixtures or a replayed run, not from the tool.
        truncated: How many values of the arguments and result were cut to the trace's limits.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: _NO_ARGUMENTS)
    result: Any = None
    error: CallError | None = None
    started: datetime | None = None
    ended: datetime | None = None
    mocked: bool = False
    truncated: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, MappingProxyType):
            object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            ToolCall,
            (
                self.name,
                dict(self.arguments),
                self.result,
                self.error,
                self.started,
                self.ended,
                self.mocked,
                self.truncated,
            ),
        )

    @property
    def duration(self) -> float | None:
        """Seconds between start and end, when both are known."""
        if self.started is None or self.ended is None:
            return None
        return (self.ended - self.started).total_seconds()


_SLOTS = tuple(
    ToolCall.__dict__[name].__set__
    for name in ("name", "arguments", "result", "error", "started", "ended", "mocked", "truncated")
)


def frozen_tool_call(
    name: str,
    arguments: MappingProxyType[str, Any],
    result: Any,
    error: CallError | None,
    started: datetime | None,
    ended: datetime | None,
    mocked: bool,
    truncated: int,
) -> ToolCall:
    """A :class:`ToolCall` made from fields that need no check (``arguments`` read-only
    already), without the frozen ``__init__``'s cost: the recorder's snapshot makes many."""
    call = object.__new__(ToolCall)
    name_, arguments_, result_, error_, started_, ended_, mocked_, truncated_ = _SLOTS
    name_(call, name)
    arguments_(call, arguments)
    result_(call, result)
    error_(call, error)
    started_(call, started)
    ended_(call, ended)
    mocked_(call, mocked)
    truncated_(call, truncated)
    return call


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call of a chat model.

    Attributes:
        model: The model's name (as the server reported it, else as requested).
        prompt_tokens: Tokens of the prompt, when the server reported them.
        completion_tokens: Tokens of the completion, when reported.
        duration: Seconds from the request to the response.
        requested_tools: The names of the tools the model asked to call, in its order.
        started: When the request was sent (UTC).
    """

    model: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    duration: float | None = None
    requested_tools: tuple[str, ...] = ()
    started: datetime | None = None

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens (unknown counts as 0)."""
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


_MODEL_SLOTS = tuple(
    ModelCall.__dict__[name].__set__
    for name in (
        "model",
        "prompt_tokens",
        "completion_tokens",
        "duration",
        "requested_tools",
        "started",
    )
)


def frozen_model_call(
    model: str | None,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    duration: float | None,
    requested_tools: tuple[str, ...],
    started: datetime | None,
) -> ModelCall:
    """A :class:`ModelCall` made without the frozen ``__init__``'s cost (see
    :func:`frozen_tool_call`)."""
    call = object.__new__(ModelCall)
    model_, prompt_, completion_, duration_, tools_, started_ = _MODEL_SLOTS
    model_(call, model)
    prompt_(call, prompt_tokens)
    completion_(call, completion_tokens)
    duration_(call, duration)
    tools_(call, requested_tools)
    started_(call, started)
    return call


@dataclass(frozen=True, slots=True)
class Document:
    """One retrieved document.

    Attributes:
        id: Its identifier, when it has one.
        text: Its text (bounded).
        score: The retriever's score, when given.
    """

    id: str | None = None
    text: str | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class Retrieval:
    """One retrieval: a query and the documents it returned, best first.

    Attributes:
        query: The query, when known.
        documents: The documents, in the retriever's order.
        started: When it was recorded (UTC).
    """

    query: str | None = None
    documents: tuple[Document, ...] = ()
    started: datetime | None = None


TraceEvent = ToolCall | ModelCall | Retrieval
"""One event of a trace."""


class _Field:
    """A field of :class:`Trace`, held in the slot of its name with a leading underscore.

    It is a dataclass field whose default is a descriptor (the dataclass documents this), so
    that a trace can hold its tool calls (and its count of cuts) or its model calls as an
    :class:`Unmade` or :class:`UnmadeModelCalls` source until they are first read: every way
    of reading a trace (the fields, equality, hashing, ``repr``, pickling,
    ``dataclasses.replace``/``asdict``, ``to_dict``) reads through here, so a trace whose
    calls are made late cannot be told from one made at once.
    """

    __slots__ = ("_default", "_slot")

    def __init__(self, default: Any) -> None:
        self._default = default
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    def __get__(self, trace: Trace | None, owner: type | None = None) -> Any:
        if trace is None:
            return self._default
        value = getattr(trace, self._slot)
        if isinstance(value, _SOURCES):
            trace._make(value)
            value = getattr(trace, self._slot)
        return value

    def __set__(self, trace: Trace, value: Any) -> None:
        object.__setattr__(trace, self._slot, value)


def _field(default: Any) -> Any:
    return _Field(default)


class _TraceSlots:
    """Where a :class:`Trace` keeps its fields (see :class:`_Field`)."""

    __slots__ = ("_dropped", "_model_calls", "_retrievals", "_tool_calls", "_truncated")

    _tool_calls: tuple[ToolCall, ...] | Unmade
    _model_calls: tuple[ModelCall, ...] | UnmadeModelCalls
    _retrievals: tuple[Retrieval, ...]
    _truncated: int | Unmade
    _dropped: int


@dataclass(frozen=True)
class Trace(_TraceSlots):
    """What one sample's run did: its tool calls, model calls and retrievals.

    Each tuple is in start order; :meth:`events` merges them, in start order too. An empty
    trace is false (``bool(trace)``: whether anything was recorded), so test a trace that
    may be missing with ``is None``.

    Attributes:
        tool_calls: The tool calls.
        model_calls: The model calls.
        retrievals: The retrievals.
        truncated: How many values were cut to the trace's limits (0: nothing was cut).
        dropped: Events not kept because the trace held its most events already.
    """

    __slots__ = ()

    tool_calls: tuple[ToolCall, ...] = _field(())
    model_calls: tuple[ModelCall, ...] = _field(())
    retrievals: tuple[Retrieval, ...] = _field(())
    truncated: int = _field(0)
    dropped: int = _field(0)

    def _make(self, source: Unmade | UnmadeModelCalls) -> None:
        """Make the calls ``source`` holds until they are first read (the same values on
        every call, so two threads reading at once agree)."""
        if isinstance(source, Unmade):
            calls, truncated = source.make()
            object.__setattr__(self, "_tool_calls", calls)
            object.__setattr__(self, "_truncated", truncated)
        else:
            object.__setattr__(self, "_model_calls", source.make())

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Trace,
            (self.tool_calls, self.model_calls, self.retrievals, self.truncated, self.dropped),
        )

    def __bool__(self) -> bool:
        if isinstance(self._tool_calls, Unmade):
            return True  # a recorder leaves calls unmade only when it holds some
        if isinstance(self._model_calls, UnmadeModelCalls):
            return True
        return bool(self.tool_calls or self.model_calls or self.retrievals)

    def events(self) -> Iterator[TraceEvent]:
        """Every event in start order (tool calls first among events that started together)."""
        streams: list[tuple[TraceEvent, ...]] = [
            self.tool_calls,
            self.model_calls,
            self.retrievals,
        ]
        keyed = [
            [(_start_key(event), kind, position, event) for position, event in enumerate(stream)]
            for kind, stream in enumerate(streams)
        ]
        for *_, event in heapq.merge(*keyed, key=lambda item: item[:3]):
            yield event

    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools called, in call order."""
        return tuple(call.name for call in self.tool_calls)

    def calls_of(self, name: str) -> tuple[ToolCall, ...]:
        """The calls of one tool, in order."""
        return tuple(call for call in self.tool_calls if call.name == name)

    @property
    def tokens(self) -> int:
        """The tokens of every model call (unknown counts as 0)."""
        return sum(call.total_tokens for call in self.model_calls)

    @property
    def seconds(self) -> float | None:
        """From the first event's start to the last event's end; ``None`` with no times."""
        starts: list[datetime] = []
        ends: list[float] = []
        for event in self.events():
            if event.started is None:
                continue
            starts.append(event.started)
            if isinstance(event, ToolCall) and event.ended is not None:
                ends.append(event.ended.timestamp())
            elif isinstance(event, ModelCall) and event.duration is not None:
                ends.append(event.started.timestamp() + event.duration)
            else:
                ends.append(event.started.timestamp())
        if not starts:
            return None
        return max(0.0, max(ends) - min(start.timestamp() for start in starts))

    def to_dict(self) -> dict[str, Any]:
        """This trace as JSON-safe data; :meth:`from_dict` reads it back unchanged."""
        from ._codec import trace_to_dict

        return trace_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trace:
        """Read a trace written by :meth:`to_dict`.

        Raises:
            ValueError: ``data`` is not a trace, naming the field at fault.
        """
        from ._codec import trace_from_dict

        return trace_from_dict(data)


def _start_key(event: TraceEvent) -> float:
    return float("-inf") if event.started is None else event.started.timestamp()


class Unmade:
    """The tool calls of a :class:`Trace` (and its count of cuts) that a recorder left to be
    made on first read: most traces are never read field by field, and making each frozen
    :class:`ToolCall` would cost more than recording the call."""

    __slots__ = ()

    def make(self) -> tuple[tuple[ToolCall, ...], int]:
        """The tool calls and ``Trace.truncated``; the same values on every call."""
        raise NotImplementedError


class UnmadeModelCalls:
    """The model calls of a :class:`Trace` that a recorder left to be made on first read:
    a model call recorded from an HTTP response is kept as its bodies until then, so a trace
    nobody reads never parses them."""

    __slots__ = ()

    def make(self) -> tuple[ModelCall, ...]:
        """The model calls; the same values on every call."""
        raise NotImplementedError


_SOURCES = (Unmade, UnmadeModelCalls)


def unmade_trace(
    tool_calls: Unmade | tuple[ToolCall, ...],
    model_calls: UnmadeModelCalls | tuple[ModelCall, ...],
    retrievals: tuple[Retrieval, ...],
    truncated: int,
    dropped: int,
) -> Trace:
    """A :class:`Trace` whose tool calls and count of cuts (when ``tool_calls`` is an
    :class:`Unmade`; else ``truncated``) and whose model calls (when ``model_calls`` is an
    :class:`UnmadeModelCalls`) are made on first read."""
    trace = object.__new__(Trace)  # its fields filled as its __init__ would, in fewer steps
    fill = object.__setattr__
    fill(trace, "_tool_calls", tool_calls)
    fill(trace, "_model_calls", model_calls)
    fill(trace, "_retrievals", retrievals)
    fill(trace, "_truncated", tool_calls if isinstance(tool_calls, Unmade) else truncated)
    fill(trace, "_dropped", dropped)
    return trace
