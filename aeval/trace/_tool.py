"""``@aeval.tool``: record each call of a function in the trace of the sample making it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from time import time_ns
from typing import Any, TypeVar, overload

from ._context import RECORDER, SEQUENCE, Pending, Recorder
from ._route import TOOL_CALL, claimed, served

__all__ = ["tool"]

_F = TypeVar("_F", bound=Callable[..., Any])
_BOUND_NAMES = ("self", "cls")
_Open = tuple[Pending, dict[str, Any]]


class _Arguments:
    """Reads a call's arguments by parameter name, with the defaults applied.

    A function with plain parameters (no ``*args``, no keyword-only ones) is read without
    ``inspect.Signature.bind``, which would cost more than the rest of the recording.
    """

    __slots__ = (
        "_defaults",
        "_signature",
        "_simple",
        "_tails",
        "_var_keyword",
        "names",
        "skip",
    )

    def __init__(self, function: Callable[..., Any]) -> None:
        try:
            self._signature: inspect.Signature | None = inspect.signature(function)
        except (TypeError, ValueError):
            self._signature = None
        parameters = [] if self._signature is None else list(self._signature.parameters.values())
        first = parameters[0].name if parameters else None
        self.skip = first if first in _BOUND_NAMES else None
        self._var_keyword = next(
            (p.name for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD), None
        )
        positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
        simple = self._signature is not None and all(p.kind is positional for p in parameters)
        self.names = tuple(p.name for p in parameters)
        self._defaults = {
            p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty
        }
        self._tails: dict[int, dict[str, Any]] = {}  # positional count -> defaults of the rest
        for count in range(len(parameters), -1, -1) if simple else ():
            rest = parameters[count:]
            if any(p.default is inspect.Parameter.empty for p in rest):
                break
            self._tails[count] = {p.name: p.default for p in rest}
        self._simple = simple

    def read(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments of one call by parameter name."""
        if not kwargs:
            tail = self._tails.get(len(args))
            if tail is not None:
                arguments = dict(zip(self.names, args))  # noqa: B905 - strict= costs more here
                if tail:
                    arguments.update(tail)
                if self.skip is not None:
                    del arguments[self.skip]
                return arguments
        elif self._simple:
            keywords = self._keywords(args, kwargs)
            if keywords is not None:
                return keywords
        return self._bind(args, kwargs)

    def _keywords(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments of a call with keywords, in parameter order; ``None`` for a call
        that does not fit (``Signature.bind`` then says why, or reads it)."""
        names = self.names
        if len(args) > len(names):
            return None
        arguments = dict(zip(names, args, strict=False))
        taken = 0
        defaults = self._defaults
        for name in names[len(args) :]:
            if name in kwargs:
                arguments[name] = kwargs[name]
                taken += 1
            elif name in defaults:
                arguments[name] = defaults[name]
            else:
                return None
        if taken != len(kwargs):
            return None
        if self.skip is not None:
            del arguments[self.skip]
        return arguments

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self._signature is None:
            return {"args": list(args), **kwargs} if args else dict(kwargs)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            return {"args": list(args), **kwargs} if args else dict(kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if self.skip is not None:
            arguments.pop(self.skip, None)
        if self._var_keyword is not None:
            arguments.update(arguments.pop(self._var_keyword, {}))
        return arguments


def _wrap(function: _F, given: str | None) -> _F:
    """The recording wrapper of ``function`` (a coroutine function's is one too)."""
    name = given or str(getattr(function, "__name__", type(function).__name__))
    read = _Arguments(function).read
    call: Callable[..., Any] = function

    def opened(recorder: Recorder, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Open | None:
        """The start and the arguments of a call this wrapper records; ``None`` when the
        route above it records it already (see :func:`claimed`)."""
        pending: Pending = (next(SEQUENCE), time_ns(), None)  # recorder.start(), inline
        arguments = read(args, kwargs)
        outer = TOOL_CALL.get()
        if outer is not None and claimed(outer, arguments):
            return None
        return pending, arguments

    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004
    ):

        async def call_async(*args: Any, **kwargs: Any) -> Any:
            recorder = RECORDER.get()
            opening = None if recorder is None else opened(recorder, args, kwargs)
            if recorder is None or opening is None:
                return await call(*args, **kwargs)
            pending, arguments = opening
            if recorder.tools is not None:
                return served(recorder, name, arguments, pending)
            try:
                result = await call(*args, **kwargs)
            except BaseException as exc:
                recorder.add_tool_call(pending, name, arguments, error=exc)
                raise
            recorder.add_tool_call(pending, name, arguments, result=result)
            return result

        return functools.wraps(function)(call_async)  # type: ignore[return-value]

    def call_sync(*args: Any, **kwargs: Any) -> Any:
        recorder = RECORDER.get()
        opening = None if recorder is None else opened(recorder, args, kwargs)
        if recorder is None or opening is None:
            return call(*args, **kwargs)
        pending, arguments = opening
        if recorder.tools is not None:
            return served(recorder, name, arguments, pending)
        try:
            result = call(*args, **kwargs)
        except BaseException as exc:
            recorder.add_tool_call(pending, name, arguments, error=exc)
            raise
        recorder.add_tool_call(pending, name, arguments, result=result)
        return result

    return functools.wraps(function)(call_sync)  # type: ignore[return-value]


@overload
def tool(function: _F, /) -> _F: ...


@overload
def tool(*, name: str | None = None) -> Callable[[_F], _F]: ...


def tool(function: _F | None = None, /, *, name: str | None = None) -> _F | Callable[[_F], _F]:
    """Record each call of a tool in the trace of the sample making it.

    Works on plain and ``async`` functions and on methods (``self`` is not recorded). The
    arguments are recorded by parameter name with the defaults applied, then the result, or
    the exception, which still propagates. Outside a sample (no Scorer, no
    ``aeval.trace.capture()``) the function is simply called. Under ``tools="fixtures"`` or a
    replay the function is not called: the result is served (``ToolCall.mocked``), and a call
    with nothing to serve raises :class:`~aeval.UnmockedToolCall`.

    Example:
        >>> import aeval
        >>> @aeval.tool
        ... def get_weather(city: str, unit: str = "C") -> str:
        ...     return f"sunny in {city}"
        >>> with aeval.trace.capture() as trace:
        ...     _ = get_weather("Mysore")
        >>> dict(trace.tool_calls[0].arguments)
        {'city': 'Mysore', 'unit': 'C'}

    Args:
        function: The function (when used as ``@aeval.tool``).
        name: The tool's name in traces; the function's name by default.
    """
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"a tool's name must be a non-blank string, got {name!r}")
    if function is None:
        return lambda inner: _wrap(_callable(inner), name)
    return _wrap(_callable(function), name)


def _callable(function: _F) -> _F:
    if not callable(function):
        raise TypeError(f"@aeval.tool decorates a function, got {function!r}")
    return function
