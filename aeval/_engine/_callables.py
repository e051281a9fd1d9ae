"""Adapting user callables: binding the function under test, preparing strategies (sync or
async); applying them to outputs is :mod:`._apply`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._reporting._results import (
    EvaluationResult,
)
from .._samples import EvaluationSample, Parameters

__all__ = [
    "BoundFunction",
    "PreparedStrategy",
    "bind_function",
    "is_async_callable",
    "names_class",
    "prepare_strategies",
    "runs_inline",
    "strategy_name",
]


def is_async_callable(obj: object) -> bool:
    """Whether calling ``obj`` returns a coroutine (functions, partials, async ``__call__``)."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    if inspect.iscoroutinefunction(obj):
        return True
    call = getattr(obj, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def _callable_name(function: object) -> str:
    target = function
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(function).__name__


def names_class(annotation: object, cls: type) -> bool:
    """Whether a parameter's ``annotation`` is ``cls``: the class itself, or its name as a
    string (``"Parameters"``, ``"aeval.Parameters"``, quoted or not)."""
    if annotation is cls:
        return True
    if isinstance(annotation, str):
        bare = annotation.strip().strip("'\"")
        return bare == cls.__name__ or bare.endswith("." + cls.__name__)
    return False


def _untyped(annotation: object) -> bool:
    if annotation is inspect.Parameter.empty or annotation is Any or annotation is object:
        return True
    if isinstance(annotation, str):
        bare = annotation.strip().strip("'\"")
        return bare in ("Any", "object") or bare.endswith(".Any")
    return False


def _asks_for_parameters(parameter: inspect.Parameter) -> bool:
    """Whether ``parameter``, a function's first, asks for the sample's ``Parameters`` whole:
    annotated ``Parameters``, or named ``params`` with no other type."""
    if parameter.kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        return False
    annotation = parameter.annotation
    return names_class(annotation, Parameters) or (
        parameter.name == "params" and _untyped(annotation)
    )


@dataclass(frozen=True, slots=True)
class BoundFunction:
    """The function under test and how a sample's parameters reach it.

    Attributes:
        call: Takes the sample's ``Parameters`` and calls the function (its result, or the
            coroutine of an async function).
        signature: The function's signature when the parameters are bound to it, ``None``
            when the function takes ``Parameters`` whole.
        name: The function's name, for messages.
    """

    call: Callable[[Parameters], Any]
    signature: inspect.Signature | None
    name: str
    fits: set[tuple[str | None, ...]] = field(default_factory=set, compare=False, repr=False)
    """The parameter names (``Parameters.names``) seen to fit the signature: whether
    parameters bind depends on their names and count alone, so each is bound once."""
    positional: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """The function itself when ``call`` gives it unnamed parameters positionally
    (``call(params)`` is then ``positional(*params.values)`` when no name is set): a caller
    may call it so without ``call``'s frame."""

    def check(self, sample: EvaluationSample) -> None:
        """Raise ``TypeError`` when ``sample``'s parameters do not fit the signature."""
        if self.signature is None:
            return
        names = sample.parameters.names
        if names in self.fits:
            return
        args, kwargs = _split(sample.parameters)
        try:
            self.signature.bind(*args, **kwargs)
            self.fits.add(names)
        except TypeError as exc:
            bare = self.signature.replace(
                parameters=[
                    p.replace(annotation=inspect.Parameter.empty)
                    for p in self.signature.parameters.values()
                ],
                return_annotation=inspect.Signature.empty,
            )
            raise TypeError(
                f"The function under test {self.name}{bare} cannot take the "
                f"parameters of sample {sample.name!r} ({sample.parameters!r}): {exc}. aeval "
                "passes a sample's values to the function's own parameters (a list by "
                "position, a mapping by name): give the sample the values the function takes "
                "or the function a parameter for each value, or name its first parameter "
                "`params` (or annotate it `Parameters`) to receive the sample's Parameters "
                "whole."
            ) from None


def _split(params: Parameters) -> tuple[tuple[Any, ...], dict[str, Any]]:
    names = params.names
    if not any(names):
        return params.values, {}
    args = tuple(v for n, v in zip(names, params.values, strict=True) if n is None)
    kwargs = {n: v for n, v in zip(names, params.values, strict=True) if n is not None}
    return args, kwargs


def bind_function(function: Callable[..., Any]) -> BoundFunction:
    """Decide, once per run, how samples' parameters are passed to ``function``.

    A function whose first parameter is annotated ``Parameters``, or named ``params`` with
    no other type, and whose other parameters are optional receives the sample's
    ``Parameters`` (the documented ``async def f(params)``), as does a callable with no
    signature to read. Any other function receives the sample's values as a call binds
    them: unnamed ones by position, named ones by name (``async def chat(question)``,
    ``def add(a, b)``, ``def f(*args, **kwargs)``).
    """
    name = _callable_name(function)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return BoundFunction(function, None, name)
    parameters = list(signature.parameters.values())
    if (
        parameters
        and _asks_for_parameters(parameters[0])
        and all(
            p.default is not inspect.Parameter.empty
            or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            for p in parameters[1:]
        )
    ):
        return BoundFunction(function, None, name)

    def call(params: Parameters) -> Any:
        names = params.names
        if not any(names):
            return function(*params.values)
        args, kwargs = _split(params)
        return function(*args, **kwargs)

    return BoundFunction(call, signature, name, positional=function)


def strategy_name(strategy: object) -> str:
    """The name rows carry: ``strategy.name`` if set, else the function or class name."""
    name = getattr(strategy, "name", None)
    if isinstance(name, str) and name:
        return name
    target = strategy
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.isfunction(target) or inspect.ismethod(target):
        return target.__name__
    return type(strategy).__name__


StrategyCall = Callable[[EvaluationSample, Any], EvaluationResult | Awaitable[EvaluationResult]]


@dataclass(frozen=True, slots=True)
class PreparedStrategy:
    """A strategy ready to call: its unique name in the run, its evaluate callable, whether
    that runs on the event loop (see :func:`runs_inline`), and whether it is a sync callable
    that does (``direct``: called straight from the worker, see ``_apply.apply``)."""

    name: str
    evaluate: StrategyCall
    position: int
    inline: bool = True
    direct: bool = False


def runs_inline(evaluate: object) -> bool:
    """Whether a strategy's ``evaluate`` runs on the event loop rather than in a thread.

    Async strategies run on the loop. So do the built-in text checks, which are pure and
    cheap and say so with the class attribute ``_runs_inline = True``: a thread hand-off
    would cost more than the check (see docs/performance.md). Any other plain function or
    method may block (an HTTP call to a moderation API), so it runs in a worker thread.
    """
    if is_async_callable(evaluate):
        return True
    owner = getattr(evaluate, "__self__", evaluate)
    return getattr(owner, "_runs_inline", False) is True


def prepare_strategies(strategies: Sequence[object]) -> tuple[PreparedStrategy, ...]:
    """Check each strategy and give it a name unique within the run.

    Two strategies with the same name (two ``ContainsStrategy`` with different lists) are told
    apart as ``ContainsStrategy``, ``ContainsStrategy#2``, … so per-strategy scores stay apart.

    Raises:
        TypeError: A strategy is neither an object with ``evaluate`` nor a callable.
    """
    prepared: list[PreparedStrategy] = []
    seen: dict[str, int] = {}
    for position, strategy in enumerate(strategies):
        if inspect.isclass(strategy):
            raise TypeError(
                f"Strategy {position + 1} is the class {strategy.__name__}, not an instance: "
                f"write {strategy.__name__}()"
            )
        evaluate = getattr(strategy, "evaluate", None)
        if evaluate is None or not callable(evaluate):
            if not callable(strategy):
                raise TypeError(
                    f"Strategy {position + 1} ({type(strategy).__name__}) has no evaluate(sample, "
                    "output) method and is not callable"
                )
            evaluate = strategy
        base = strategy_name(strategy)
        count = seen.get(base, 0) + 1
        seen[base] = count
        name = base if count == 1 else f"{base}#{count}"
        inline = runs_inline(evaluate)
        direct = inline and not is_async_callable(evaluate)
        prepared.append(PreparedStrategy(name, evaluate, position, inline, direct))
    return tuple(prepared)
