"""Applying strategies to outputs: one strategy's verdict on one output, as a row, on the
event loop or in a worker thread."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from time import perf_counter
from typing import Any

import anyio

from .._reporting._results import (
    ErrorInfo,
    EvaluationResult,
    EvaluationRow,
    Outcome,
    StrayCancellation,
    safe_str,
)
from .._samples import EvaluationSample
from .._util._slots import fast_slots_maker
from ..trace import Trace
from ._callables import PreparedStrategy, StrategyCall, runs_inline
from ._threads import DaemonThreads
from ._workers import running_asyncio

__all__ = [
    "apply_inline",
    "apply_strategy",
    "apply_to_row",
    "inline_failure",
    "inline_result",
    "make_row",
    "retries_of",
    "strategy_threads",
    "stray_cancellation",
]

_PASSED = Outcome.PASSED
_FAILED = Outcome.FAILED
make_row = fast_slots_maker(EvaluationRow)
"""``EvaluationRow(*all_15_fields)``, faster (see ``fast_slots_maker``): for the per-row path."""
_THREADS: ContextVar[DaemonThreads | None] = ContextVar("aeval_strategy_threads", default=None)


@contextmanager
def strategy_threads(threads: DaemonThreads | None) -> Iterator[None]:
    """Run the sync strategies applied in this context (and the tasks it starts) on
    ``threads``; without such a context they run inline."""
    token = _THREADS.set(threads)
    try:
        yield
    finally:
        _THREADS.reset(token)


def stray_cancellation(exc: BaseException, who: str) -> StrayCancellation | None:
    """A :class:`StrayCancellation` for ``exc`` when it is a ``CancelledError`` that does not
    cancel the task it reached, else ``None`` (a real cancellation, or no ``CancelledError``).

    On asyncio a task being cancelled counts the request (``Task.cancelling()``, which anyio's
    cancel scopes and ``asyncio.timeout`` keep too); a ``CancelledError`` that reaches a task
    no one asked to cancel came from something it awaited. On trio a ``Cancelled`` cannot be
    raised that way: it is always real.
    """
    asyncio = running_asyncio()
    if asyncio is None or not isinstance(exc, asyncio.CancelledError):
        return None
    task = asyncio.current_task()
    if task is None or task.cancelling():
        return None
    stray = StrayCancellation(who)
    stray.__cause__ = exc
    return stray


async def apply_strategy(
    evaluate: StrategyCall,
    name: str,
    sample: EvaluationSample,
    output: Any,
    *,
    inline: bool | None = None,
) -> EvaluationResult:
    """Call a strategy, sync or async, and check that it returned an ``EvaluationResult``.

    A sync strategy that does not run inline (``inline``, default :func:`runs_inline`) runs
    in a thread of the run's pool (:func:`strategy_threads`), so that one that blocks
    cannot stall the event loop and a timeout or a cancellation abandons it.

    A strategy cannot stop the run: ``SystemExit``, ``KeyboardInterrupt`` or another
    ``BaseException`` it raises (cancellation and ``GeneratorExit`` aside) becomes a
    ``RuntimeError`` naming it, so the caller makes an error row of it, as of any error. A
    ``CancelledError`` propagates only when this task is being cancelled; one that came from
    something the strategy awaited becomes a :class:`StrayCancellation`.

    Raises:
        TypeError: The strategy returned something else.
        RuntimeError: The strategy raised a ``BaseException`` that is not an ``Exception``.
        StrayCancellation: The strategy raised ``CancelledError`` outside a cancellation.
        Exception: Whatever the strategy raised.
    """
    threads = _THREADS.get()
    try:
        if threads is None or (runs_inline(evaluate) if inline is None else inline):
            result = evaluate(sample, output)
        else:
            result = await threads.run(functools.partial(evaluate, sample), output)
        if type(result) is not EvaluationResult and inspect.isawaitable(result):
            result = await result
    except Exception:
        raise
    except BaseException as exc:
        raise _strategy_interrupt(exc, name) from exc
    return _checked(result, name)


def _strategy_interrupt(exc: BaseException, name: str) -> BaseException:
    """What a strategy's ``BaseException`` that is not an ``Exception`` becomes: raised as it
    is (a real cancellation, ``GeneratorExit``), a :class:`StrayCancellation`, or a
    ``RuntimeError`` naming the strategy (``SystemExit``, ``KeyboardInterrupt``, …)."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        stray = stray_cancellation(exc, f"strategy {name}")
        if stray is None:
            raise exc
        return stray
    if isinstance(exc, GeneratorExit):
        raise exc
    return RuntimeError(
        f"strategy {name} raised {type(exc).__name__}"
        + (f" ({safe_str(exc)})" if safe_str(exc) else "")
        + ": a strategy cannot stop the run; return an EvaluationResult or raise an "
        "Exception"
    )


def _checked(result: object, name: str) -> EvaluationResult:
    if not isinstance(result, EvaluationResult):
        raise TypeError(
            f"strategy {name} returned {type(result).__name__}, expected an "
            "EvaluationResult (e.g. EvaluationResult.from_boolean(...))"
        )
    return result


def retries_of(exc: BaseException) -> dict[str, int] | None:
    """``{"retries": n}`` for an error raised after retries (a model client's), else ``None``.

    Counted on one row only, so the report's usage sums each retry once.
    """
    retries = getattr(exc, "retries", None)
    if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0:
        return {"retries": retries}
    return None


async def apply_to_row(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    output: Any,
    *,
    duration: float,
    index: int,
    repeat: int = 0,
    seconds: float | None,
    timed_out: Callable[[float], str],
    tracebacks: bool,
    timestamp: float | None = None,
    reraise: tuple[type[Exception], ...] = (),
    trace: Trace | None = None,
) -> EvaluationRow:
    """Apply one strategy to one output and make its row: the one way the Scorer and the
    online evaluator turn a strategy's verdict, or its failure, into a row.

    Args:
        strategy: The prepared strategy.
        sample: The sample the output was produced from.
        output: The output to judge.
        duration: Seconds the function under test took (the row's ``duration``).
        index: The sample's index.
        repeat: Which repeat of the sample the output is.
        seconds: Seconds the strategy may take; ``None`` for no limit.
        timed_out: The error message of a strategy that took longer than ``seconds``.
        tracebacks: Keep the traceback of an error in its row.
        timestamp: When the output was produced (live traffic).
        reraise: Errors that stop the run instead of becoming an error row.
        trace: The sample's trace, kept on the row.
    """
    row = _RowMaker(strategy, sample, output, duration, index, repeat, timestamp, trace)
    started = perf_counter()
    try:
        if seconds is None:
            result = await apply_strategy(
                strategy.evaluate, strategy.name, sample, output, inline=strategy.inline
            )
        else:
            with anyio.move_on_after(seconds) as scope:
                result = await apply_strategy(
                    strategy.evaluate, strategy.name, sample, output, inline=strategy.inline
                )
            if scope.cancelled_caught:
                return row.timed_out(timed_out(seconds), started)
    except reraise:
        raise
    except Exception as exc:
        return row.error(exc, started, tracebacks)
    return row.result(result, started)


def apply_inline(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    output: Any,
    duration: float,
    index: int,
    repeat: int,
    trace: Trace | None,
    seconds: float | None,
    timed_out: Callable[[float], str],
    tracebacks: bool,
    reraise: tuple[type[Exception], ...] = (),
    timestamp: float | None = None,
) -> EvaluationRow | Awaitable[EvaluationRow]:
    """:func:`apply_to_row` for a ``direct`` strategy (a sync callable that runs on the event
    loop), called without a coroutine (and positionally: this is the per-row path): the row,
    made the same way.

    A sync call cannot be interrupted, so ``seconds`` only bounds an awaitable the strategy
    returned (then the return value is a coroutine that awaits it, as :func:`apply_to_row`
    does, and gives the row).
    """
    started = perf_counter()
    try:
        result = strategy.evaluate(sample, output)
    except reraise:
        raise
    except BaseException as exc:
        return inline_failure(
            strategy,
            sample,
            output,
            duration,
            index,
            repeat,
            trace,
            exc,
            started,
            tracebacks,
            timestamp,
        )
    if type(result) is EvaluationResult and result.score is not None and not result.skipped:
        return make_row(  # EvaluationRow.from_result, without its keywords' cost
            sample,
            strategy.name,
            output,
            _PASSED if result.passed else _FAILED,
            result.score,
            result.explanation,
            result.metadata,
            None,
            duration,
            perf_counter() - started,
            index,
            repeat,
            strategy.position,
            timestamp,
            trace,
        )
    return inline_result(
        strategy,
        sample,
        output,
        duration,
        index,
        repeat,
        trace,
        result,
        started,
        seconds,
        timed_out,
        tracebacks,
        reraise,
        timestamp,
    )


def inline_failure(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    output: Any,
    duration: float,
    index: int,
    repeat: int,
    trace: Trace | None,
    exc: BaseException,
    started: float,
    tracebacks: bool,
    timestamp: float | None = None,
) -> EvaluationRow:
    """The row of a direct strategy that raised ``exc`` (not one of ``reraise``; see
    :func:`apply_inline`): an interrupt becomes the error it is in :func:`apply_to_row`."""
    failure = exc if isinstance(exc, Exception) else _strategy_interrupt(exc, strategy.name)
    if failure is not exc:
        failure.__cause__ = exc
    row = _RowMaker(strategy, sample, output, duration, index, repeat, timestamp, trace)
    return row.error(failure, started, tracebacks)


def inline_result(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    output: Any,
    duration: float,
    index: int,
    repeat: int,
    trace: Trace | None,
    result: Any,
    started: float,
    seconds: float | None,
    timed_out: Callable[[float], str],
    tracebacks: bool,
    reraise: tuple[type[Exception], ...] = (),
    timestamp: float | None = None,
) -> EvaluationRow | Awaitable[EvaluationRow]:
    """The row of what a direct strategy returned (see :func:`apply_inline`), every case
    but the scored ``EvaluationResult`` that the callers make into a row themselves."""
    row = _RowMaker(strategy, sample, output, duration, index, repeat, timestamp, trace)
    if isinstance(result, EvaluationResult):
        return row.result(result, started)
    if not inspect.isawaitable(result):
        try:
            return row.result(_checked(result, strategy.name), started)
        except TypeError as exc:
            return row.error(exc, started, tracebacks)
    return _settle(row, result, started, seconds, timed_out, tracebacks, reraise)


async def _settle(
    row: _RowMaker,
    pending: Awaitable[Any],
    started: float,
    seconds: float | None,
    timed_out: Callable[[float], str],
    tracebacks: bool,
    reraise: tuple[type[Exception], ...],
) -> EvaluationRow:
    name = row.strategy.name

    async def settle() -> EvaluationResult:
        try:
            result = await pending
        except Exception:
            raise
        except BaseException as exc:
            raise _strategy_interrupt(exc, name) from exc
        return _checked(result, name)

    try:
        if seconds is None:
            result = await settle()
        else:
            with anyio.move_on_after(seconds) as scope:
                result = await settle()
            if scope.cancelled_caught:
                return row.timed_out(timed_out(seconds), started)
    except reraise:
        raise
    except Exception as exc:
        return row.error(exc, started, tracebacks)
    return row.result(result, started)


class _RowMaker:
    """The parts of one strategy's row known before it runs; makes the row once it has."""

    __slots__ = (
        "duration",
        "index",
        "output",
        "repeat",
        "sample",
        "strategy",
        "timestamp",
        "trace",
    )

    def __init__(
        self,
        strategy: PreparedStrategy,
        sample: EvaluationSample,
        output: Any,
        duration: float,
        index: int,
        repeat: int,
        timestamp: float | None,
        trace: Trace | None,
    ) -> None:
        self.strategy = strategy
        self.sample = sample
        self.output = output
        self.duration = duration
        self.index = index
        self.repeat = repeat
        self.timestamp = timestamp
        self.trace = trace

    def result(self, result: EvaluationResult, started: float) -> EvaluationRow:
        return EvaluationRow.from_result(
            self.sample,
            self.strategy.name,
            self.output,
            result,
            duration=self.duration,
            strategy_duration=perf_counter() - started,
            index=self.index,
            repeat=self.repeat,
            position=self.strategy.position,
            timestamp=self.timestamp,
            trace=self.trace,
        )

    def error(self, exc: BaseException, started: float, tracebacks: bool) -> EvaluationRow:
        return self._error(
            ErrorInfo.from_exception(exc, with_traceback=tracebacks), started, retries_of(exc)
        )

    def timed_out(self, message: str, started: float) -> EvaluationRow:
        return self._error(ErrorInfo("TimeoutError", message), started, None)

    def _error(
        self, error: ErrorInfo, started: float, metadata: dict[str, int] | None
    ) -> EvaluationRow:
        return EvaluationRow.from_error(
            self.sample,
            self.strategy.name,
            self.output,
            error,
            duration=self.duration,
            strategy_duration=perf_counter() - started,
            index=self.index,
            repeat=self.repeat,
            position=self.strategy.position,
            metadata=metadata,
            timestamp=self.timestamp,
            trace=self.trace,
        )
