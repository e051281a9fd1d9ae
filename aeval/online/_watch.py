"""The ``watch`` decorator: each call of a service's function submitted for evaluation."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from time import perf_counter
from typing import Any, TypeVar, cast

from .._engine._callables import is_async_callable
from ..trace import Recorder, Trace, recording
from ..trace._recording import current_recorder

__all__ = ["Submit", "watch_calls"]

_F = TypeVar("_F", bound=Callable[..., Any])

Submit = Callable[
    [
        Any,
        Any,
        str | None,
        str | None,
        Iterable[str],
        Mapping[str, Any] | None,
        float,
        Trace | None,
    ],
    bool,
]
"""``submit(inputs, output, name, prefix, tags, metadata, duration, trace)``: the
evaluator's own."""


def _recording() -> Any:
    """A recording of one watched call: inside a sample it serves the sample's tools and
    keeps its limits (the sample's trace gets the calls too, see :func:`_finish`)."""
    outer = current_recorder()
    if outer is None:
        return recording()
    return recording(limits=outer.limits, tools=outer.tools)


def _finish(outer: Recorder | None, recorder: Recorder) -> Trace | None:
    if outer is not None:
        outer.absorb(recorder)
    return recorder.snapshot()


def watch_calls(
    submit: Submit,
    function: Callable[..., Any] | None,
    *,
    name: str | None,
    tags: Iterable[str],
    metadata: Mapping[str, Any] | None,
) -> Any:
    """``function`` wrapped to submit each call (a decorator for it when ``None``)."""
    if function is None:
        return functools.partial(_wrap, submit=submit, name=name, tags=tags, metadata=metadata)
    return _wrap(function, submit=submit, name=name, tags=tags, metadata=metadata)


def _wrap(
    function: _F,
    *,
    submit: Submit,
    name: str | None,
    tags: Iterable[str],
    metadata: Mapping[str, Any] | None,
) -> _F:
    if not callable(function):
        raise TypeError(f"watch() decorates a function, got {type(function).__name__}")
    prefix = name or getattr(function, "__name__", None) or "watched"
    tags = tuple(tags)
    signature = inspect.signature(function)

    positional = [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    simple = all(
        p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in signature.parameters.values()
    )

    def inputs_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if simple and len(args) <= len(positional):  # the common case, without bind()
            bound = dict(zip(positional, args, strict=False))
            bound.update(kwargs)
        else:
            bound = dict(signature.bind(*args, **kwargs).arguments)
        bound.pop("self", None)
        return bound

    def report(
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
        started: float,
        trace: Trace | None,
    ) -> None:
        duration = perf_counter() - started
        try:
            inputs = inputs_of(args, kwargs)
        except Exception:
            inputs = {"args": args, "kwargs": kwargs}
        submit(inputs, result, None, prefix, tags, metadata, duration, trace)

    if is_async_callable(function):

        @functools.wraps(function)
        async def watched(*args: Any, **kwargs: Any) -> Any:
            started = perf_counter()
            outer = current_recorder()
            with _recording() as recorder:
                try:
                    result = await function(*args, **kwargs)
                finally:
                    trace = _finish(outer, recorder)
            report(args, kwargs, result, started, trace)
            return result

        return cast("_F", watched)

    @functools.wraps(function)
    def watched_sync(*args: Any, **kwargs: Any) -> Any:
        started = perf_counter()
        outer = current_recorder()
        with _recording() as recorder:
            try:
                result = function(*args, **kwargs)
            finally:
                trace = _finish(outer, recorder)
        report(args, kwargs, result, started, trace)
        return result

    return cast("_F", watched_sync)
