"""Assertions on a trace: ``assert_trace(trace).called("get_weather").not_called("book")``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._capture import Capture
from ._fixtures import show_call
from ._values import ToolCall, Trace

__all__ = ["TraceAssert", "assert_trace"]


def _listing(calls: Sequence[ToolCall]) -> str:
    if not calls:
        return "no tool was called"
    lines = [
        f"  {index}. {show_call(call.name, call.arguments)}" for index, call in enumerate(calls, 1)
    ]
    return "the tool calls were:\n" + "\n".join(lines)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


class TraceAssert:
    """Chainable checks of a trace; each failure says what was expected and lists the calls.

    Args:
        trace: The trace, or a capture (``aeval.trace.capture()``, read when each check runs).
    """

    __slots__ = ("_source",)

    def __init__(self, trace: Trace | Capture) -> None:
        if not isinstance(trace, Trace | Capture):
            raise TypeError(
                "assert_trace takes an aeval.trace.Trace or the capture of "
                f"aeval.trace.capture(), got {type(trace).__name__}"
            )
        self._source = trace

    @property
    def trace(self) -> Trace:
        """The trace being checked."""
        return self._source.trace if isinstance(self._source, Capture) else self._source

    def _fail(self, message: str) -> AssertionError:
        return AssertionError(f"{message}; {_listing(self.trace.tool_calls)}")

    def called(self, name: str, times: int | None = None) -> TraceAssert:
        """``name`` was called (exactly ``times`` times, when given)."""
        count = len(self.trace.calls_of(name))
        if times is None and count == 0:
            raise self._fail(f"expected a call of {name!r}, but it was not called")
        if times is not None and count != times:
            raise self._fail(
                f"expected {name!r} to be called {_times(times)}, but it was called {_times(count)}"
                if count
                else f"expected {name!r} to be called {_times(times)}, but it was not called"
            )
        return self

    def not_called(self, name: str) -> TraceAssert:
        """``name`` was never called."""
        count = len(self.trace.calls_of(name))
        if count:
            raise self._fail(f"expected no call of {name!r}, but it was called {_times(count)}")
        return self

    def called_in_order(self, names: Sequence[str]) -> TraceAssert:
        """The tools ``names`` were called in this order (other calls may come between)."""
        if isinstance(names, str):
            raise TypeError("called_in_order takes a list of tool names, e.g. ['search', 'book']")
        called = iter(self.trace.tool_names())
        for position, name in enumerate(names):
            if not any(seen == name for seen in called):
                raise self._fail(
                    f"expected the calls {list(names)!r} in this order, but no call of {name!r} "
                    f"came after {list(names[:position])!r}"
                    if position
                    else f"expected the calls {list(names)!r} in this order, but {name!r} was "
                    "not called"
                )
        return self

    def called_with(self, name: str, /, **arguments: Any) -> TraceAssert:
        """Some call of ``name`` had these arguments (others may be there too)."""
        calls = self.trace.calls_of(name)
        if not calls:
            raise self._fail(
                f"expected a call {show_call(name, arguments)}, but {name!r} was not called"
            )
        for call in calls:
            if all(
                key in call.arguments and call.arguments[key] == value
                for key, value in arguments.items()
            ):
                return self
        raise self._fail(
            f"expected a call {show_call(name, arguments)}, but no call of {name!r} had these "
            "arguments"
        )


def assert_trace(trace: Trace | Capture) -> TraceAssert:
    """Start chainable assertions on a trace or a capture.

    Example:
        >>> import aeval
        >>> @aeval.tool
        ... def get_weather(city: str) -> str:
        ...     return "sunny"
        >>> with aeval.trace.capture() as trace:
        ...     _ = get_weather("Mysore")
        >>> _ = assert_trace(trace).called("get_weather", times=1).called_with(
        ...     "get_weather", city="Mysore").not_called("book_ticket")
    """
    return TraceAssert(trace)
