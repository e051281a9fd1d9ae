"""Applying strategies to outputs: one strategy's verdict on one output, as a row, on the
event loop or in a worker thread.

:func:`apply` is the one way a verdict becomes a row, for the Scorer's runs, rescoring and
online evaluation alike; :meth:`Judged.row` and :meth:`Judged.error` are the one place a
row of a verdict or of a strategy's failure is made.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from time import perf_counter
from typing import Any, cast

import anyio

from .._conversation import Transcript
from .._reporting._results import (
    ErrorInfo,
    EvaluationResult,
    EvaluationRow,
    Outcome,
    StrayCancellation,
    outcome_of,
    safe_str,
)
from .._samples import EvaluationSample
from ..trace import Trace
from ._callables import PreparedStrategy, StrategyCall, runs_inline
from ._threads import DaemonThreads
from ._workers import running_asyncio

__all__ = [
    "COUNTED",
    "Judged",
    "apply",
    "apply_strategy",
    "apply_to_row",
    "retries_of",
    "strategy_threads",
    "stray_cancellation",
]

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
    return await _verdict(_evaluated(evaluate, sample, output, inline), name)


async def _evaluated(
    evaluate: StrategyCall, sample: EvaluationSample, output: Any, inline: bool | None
) -> Any:
    """What ``evaluate`` returned, awaited, called inline or in the run's threads."""
    threads = _THREADS.get()
    if threads is None or (runs_inline(evaluate) if inline is None else inline):
        result = evaluate(sample, output)
    else:
        result = await threads.run(functools.partial(evaluate, sample), output)
    if type(result) is not EvaluationResult and inspect.isawaitable(result):
        result = await result
    return result


async def _verdict(pending: Awaitable[Any], name: str) -> EvaluationResult:
    """The ``EvaluationResult`` strategy ``name`` gives through ``pending``; what it raises
    that is not an ``Exception`` becomes what :func:`_strategy_interrupt` says."""
    try:
        result = await pending
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


_new = object.__new__

COUNTED = EvaluationRow(EvaluationSample("counted"), None, None, Outcome.PASSED, 1.0)
"""What :func:`apply` gives for a row :attr:`Judged.count` counted without making it: a
caller that sets ``count`` skips this one row, and no other caller ever sees it."""


@dataclass(slots=True)
class Judged:
    """One output to judge, and what each of its rows carries beside the verdict: made once
    per (sample, repeat), read by every strategy's :func:`apply`.

    Its fields may be given positionally: a class called with keywords costs CPython a dict
    of them (about 0.5 µs, a sixth of a sample's cost in the engine), so the Scorer's step
    passes them in order."""

    sample: EvaluationSample
    output: Any
    duration: float
    """Seconds the function under test took."""
    index: int
    """The sample's index."""
    repeat: int = 0
    """Which repeat of the sample the output is."""
    timestamp: float | None = None
    """When the output was produced (live traffic)."""
    trace: Trace | None = None
    """The sample's trace, kept on each row."""
    extra: Mapping[str, Any] | None = None
    """Joins the first row's metadata (a conversation's simulated-user usage)."""
    count: Callable[[tuple[str, ...], str, float], None] | None = None
    """Where a plain passing row nobody reads is counted instead of made (a run without
    sinks that keeps no passing row: ``RowAggregator.count_passed``), else ``None``."""

    def row(
        self, strategy: PreparedStrategy, result: EvaluationResult, started: float
    ) -> EvaluationRow:
        """The row of ``strategy``'s verdict ``result``, applied since ``started``
        (``EvaluationRow.from_result``, positionally: this runs once per row); :data:`COUNTED`
        when :attr:`count` counted it instead: a pass with a score and no metadata, of a
        sample without metadata, its output no transcript (whose row a report reads)."""
        count = self.count
        if (
            count is not None
            and result.passed
            and not result.metadata
            and result.score is not None
            and not self.sample.metadata
            and type(self.output) is not Transcript
        ):
            count(self.sample.tags, strategy.name, result.score)
            return COUNTED
        # EvaluationRow(...) as its __init__ makes it, called directly: CPython's call of a
        # class packs fifteen arguments in a tuple first (2.9k of ~77k instructions a sample)
        row: EvaluationRow = _new(EvaluationRow)
        EvaluationRow.__init__(
            row,
            self.sample,
            strategy.name,
            self.output,
            outcome_of(result),
            result.score,
            result.explanation,
            result.metadata,
            None,
            self.duration,
            perf_counter() - started,
            self.index,
            self.repeat,
            strategy.position,
            self.timestamp,
            self.trace,
        )
        return row

    def error(
        self,
        strategy: PreparedStrategy,
        exc: BaseException | str,
        started: float,
        *,
        tracebacks: bool,
    ) -> EvaluationRow:
        """The error row of ``strategy``, which raised ``exc`` or (a message) timed out."""
        if isinstance(exc, str):
            error, metadata = ErrorInfo("TimeoutError", exc), None
        else:
            error = ErrorInfo.from_exception(exc, with_traceback=tracebacks)
            metadata = retries_of(exc)
        return self.error_row(
            strategy, error, strategy_duration=perf_counter() - started, metadata=metadata
        )

    def error_row(
        self,
        strategy: PreparedStrategy,
        error: ErrorInfo,
        *,
        strategy_duration: float = 0.0,
        metadata: Mapping[str, Any] | None = None,
    ) -> EvaluationRow:
        """The row of ``strategy`` stopped by ``error`` (its own, or the function's)."""
        return EvaluationRow.from_error(
            self.sample,
            strategy.name,
            self.output,
            error,
            duration=self.duration,
            strategy_duration=strategy_duration,
            index=self.index,
            repeat=self.repeat,
            position=strategy.position,
            metadata=metadata,
            timestamp=self.timestamp,
            trace=self.trace,
        )


def apply(
    strategy: PreparedStrategy,
    judged: Judged,
    *,
    seconds: float | None,
    timed_out: Callable[[float], str],
    tracebacks: bool,
    reraise: tuple[type[Exception], ...] = (),
) -> EvaluationRow | Awaitable[EvaluationRow]:
    """Apply one strategy to one output and make its row, or its error row: the one way
    the Scorer, rescoring and the online evaluator turn a verdict, or a failure, into a row
    (:data:`COUNTED` when :attr:`Judged.count` counted it instead).

    A ``direct`` strategy (a sync callable that runs on the event loop) is called here and
    its row returned at once; any other strategy, or an awaitable a direct one returned,
    gives an awaitable of the row (the caller tells them apart with
    ``type(row) is EvaluationRow``).

    Args:
        strategy: The prepared strategy.
        judged: The output and what its rows carry.
        seconds: Seconds the strategy may take; ``None`` for no limit. A sync call cannot
            be interrupted, so for a direct strategy this bounds only an awaitable it returned.
        timed_out: The error message of a strategy that took longer than ``seconds``.
        tracebacks: Keep the traceback of an error in its row.
        reraise: Errors that stop the run instead of becoming an error row.
    """
    started = perf_counter()
    if not strategy.direct:
        pending = _evaluated(strategy.evaluate, judged.sample, judged.output, strategy.inline)
        return _settle(strategy, judged, pending, started, seconds, timed_out, tracebacks, reraise)
    try:
        result = strategy.evaluate(judged.sample, judged.output)
    except reraise:
        raise
    except BaseException as exc:
        failure = exc if isinstance(exc, Exception) else _strategy_interrupt(exc, strategy.name)
        if failure is not exc:
            failure.__cause__ = exc
        return judged.error(strategy, failure, started, tracebacks=tracebacks)
    if type(result) is not EvaluationResult:
        if inspect.isawaitable(result):
            return _settle(
                strategy, judged, result, started, seconds, timed_out, tracebacks, reraise
            )
        try:
            result = _checked(result, strategy.name)
        except TypeError as exc:
            return judged.error(strategy, exc, started, tracebacks=tracebacks)
    return judged.row(strategy, result, started)


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
    """:func:`apply` for one output, awaited: its row (see :class:`Judged` for the rest)."""
    judged = Judged(
        sample,
        output,
        duration=duration,
        index=index,
        repeat=repeat,
        timestamp=timestamp,
        trace=trace,
    )
    row = apply(
        strategy,
        judged,
        seconds=seconds,
        timed_out=timed_out,
        tracebacks=tracebacks,
        reraise=reraise,
    )
    if type(row) is EvaluationRow:
        return row
    return await cast("Awaitable[EvaluationRow]", row)  # not an EvaluationRow: its awaitable


async def _settle(
    strategy: PreparedStrategy,
    judged: Judged,
    pending: Awaitable[Any],
    started: float,
    seconds: float | None,
    timed_out: Callable[[float], str],
    tracebacks: bool,
    reraise: tuple[type[Exception], ...],
) -> EvaluationRow:
    try:
        if seconds is None:
            result = await _verdict(pending, strategy.name)
        else:
            with anyio.move_on_after(seconds) as scope:
                result = await _verdict(pending, strategy.name)
            if scope.cancelled_caught:
                return judged.error(strategy, timed_out(seconds), started, tracebacks=tracebacks)
    except reraise:
        raise
    except Exception as exc:
        return judged.error(strategy, exc, started, tracebacks=tracebacks)
    return judged.row(strategy, result, started)
