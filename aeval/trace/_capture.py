"""``aeval.trace.capture()``: record a trace outside a Scorer, e.g. in a pytest test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._bounds import DEFAULT_LIMITS, TraceLimits
from ._context import Recorder, ToolSource
from ._recording import Scope, activate
from ._values import ModelCall, Retrieval, ToolCall, Trace

__all__ = ["Capture", "capture"]


class Capture(Scope):
    """What :func:`capture` records: read :attr:`trace` after (or during) the block.

    It reads like the :class:`Trace` recorded so far: every attribute and method of a trace
    (``tool_calls``, ``model_calls``, ``retrievals``, ``truncated``, ``dropped``, ``tokens``,
    ``seconds``, ``events()``, ``tool_names()``, ``calls_of()``, ``to_dict()``, and false
    while nothing was recorded), so ``async with capture() as trace:`` gives a name that
    reads as a trace; ``aeval.trace.assert_trace(capture)`` checks it.
    """

    __slots__ = ("_recorder",)

    def __init__(
        self, *, limits: TraceLimits = DEFAULT_LIMITS, tools: ToolSource | None = None
    ) -> None:
        super().__init__()
        self._recorder = Recorder(limits=limits, tools=tools)

    @property
    def trace(self) -> Trace:
        """What was recorded so far (an empty trace when nothing was)."""
        return self._recorder.trace()

    @property
    def recorder(self) -> Recorder:
        """The recorder behind this capture."""
        return self._recorder

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls recorded so far."""
        return self.trace.tool_calls

    @property
    def model_calls(self) -> tuple[ModelCall, ...]:
        """The model calls recorded so far."""
        return self.trace.model_calls

    @property
    def retrievals(self) -> tuple[Retrieval, ...]:
        """The retrievals recorded so far."""
        return self.trace.retrievals

    @property
    def truncated(self) -> int:
        """How many values recorded so far were cut to the limits."""
        return self.trace.truncated

    @property
    def dropped(self) -> int:
        """Events not kept so far because the trace held its most events already."""
        return self.trace.dropped

    @property
    def tokens(self) -> int:
        """The tokens of every model call so far (unknown counts as 0)."""
        return self.trace.tokens

    @property
    def seconds(self) -> float | None:
        """From the first event's start to the last event's end so far; ``None`` with no
        times."""
        return self.trace.seconds

    def to_dict(self) -> dict[str, Any]:
        """What was recorded so far as JSON-safe data (``Trace.from_dict`` reads it)."""
        return self.trace.to_dict()

    def __bool__(self) -> bool:
        return bool(self.trace)

    def events(self) -> Iterator[ToolCall | ModelCall | Retrieval]:
        """Every event so far, in start order."""
        return self.trace.events()

    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools called so far, in order."""
        return self.trace.tool_names()

    def calls_of(self, name: str) -> tuple[ToolCall, ...]:
        """The calls of one tool so far."""
        return self.trace.calls_of(name)

    def __enter__(self) -> Capture:
        if self._tokens is not None:
            raise RuntimeError("this capture is already active: make a new one with capture()")
        self._tokens = activate(self._recorder)
        return self

    async def __aenter__(self) -> Capture:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__(*exc_info)

    def __repr__(self) -> str:
        return f"<Capture {self.trace!r}>"


def capture(*, limits: TraceLimits = DEFAULT_LIMITS, tools: ToolSource | None = None) -> Capture:
    """Record a trace outside a Scorer, e.g. in a pytest test.

    Example:
        >>> import aeval
        >>> @aeval.tool
        ... def get_weather(city: str) -> str:
        ...     return "sunny"
        >>> with aeval.trace.capture() as trace:
        ...     _ = get_weather("Mysore")
        >>> trace.tool_names()
        ('get_weather',)

    Args:
        limits: What is kept of each value.
        tools: Serve ``@aeval.tool`` results from fixtures (``aeval.trace.Fixtures``) instead
            of calling the tools.
    """
    return Capture(limits=limits, tools=tools)
