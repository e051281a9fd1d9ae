"""Adapting user callables: the function under test and strategies, sync or async."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._results import EvaluationResult
from ._samples import EvaluationSample

__all__ = [
    "PreparedStrategy",
    "apply_strategy",
    "is_async_callable",
    "prepare_strategies",
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
    """A strategy ready to call: its unique name in the run and its evaluate callable."""

    name: str
    evaluate: StrategyCall
    position: int


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
        prepared.append(PreparedStrategy(name, evaluate, position))
    return tuple(prepared)


async def apply_strategy(
    evaluate: StrategyCall, name: str, sample: EvaluationSample, output: Any
) -> EvaluationResult:
    """Call a strategy, sync or async, and check that it returned an ``EvaluationResult``.

    Raises:
        TypeError: The strategy returned something else.
        Exception: Whatever the strategy raised.
    """
    result = evaluate(sample, output)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, EvaluationResult):
        raise TypeError(
            f"strategy {name} returned {type(result).__name__}, expected an "
            "EvaluationResult (e.g. EvaluationResult.from_boolean(...))"
        )
    return result
