"""The direct worker: a run's per-sample steps in one loop, for the common runs.

An async target awaited as it is, live tools, nothing recorded or current around the run and
only direct strategies (sync checks that run on the event loop): ``Run._direct`` admits such
a run, whose workers then run :func:`direct_worker` instead of a loop that awaits
``Run._evaluate_sample`` per sample. The rows, counts and traces are the same
(``tests/test_direct_worker.py`` compares the two paths); only the work per sample is less.
In a run without sinks whose passing rows are not kept, a plain passing row (no metadata,
its sample none) is counted without being made (``RowAggregator.count_passed``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from sys import getrefcount
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from .._conversation import Transcript
from .._exceptions import AbandonedCallsError
from .._reporting._results import EvaluationResult, EvaluationRow, Outcome
from ..trace._context import CURRENT, EMPTY_TRACE, RECORDER, Recorder
from ._apply import inline_failure, inline_result, make_row
from ._workers import AsyncWork

if TYPE_CHECKING:
    from .._samples import EvaluationSample
    from ._run import Run

__all__ = ["RERAISE", "direct_worker"]

RERAISE = (AbandonedCallsError,)
"""Errors of a strategy that stop the run instead of becoming an error row."""
_PASSED, _FAILED = Outcome.PASSED, Outcome.FAILED


def _unshared() -> int:
    probe = object()
    return getrefcount(probe)


_UNSHARED = _unshared()
"""``sys.getrefcount`` of an object only a local variable holds (2 on CPython 3.11: the
variable and the call's argument), measured rather than assumed, as interpreters differ."""


_UNSEEN: Any = object()


class _Passed:
    """A strategy's last result seen to be a plain pass (:func:`plain_pass`): results are
    frozen, and a built-in check returns the same one for each pass."""

    __slots__ = ("result", "score")

    def __init__(self) -> None:
        self.result: object = None
        self.score = 0.0


def plain_pass(result: object) -> TypeGuard[EvaluationResult]:
    """Whether ``result`` makes a passing row that ``count_passed`` may count unmade: an
    ``EvaluationResult`` that passed with a score, not skipped, without metadata."""
    return (
        type(result) is EvaluationResult
        and result.passed
        and result.score is not None
        and not result.skipped
        and not result.metadata
    )


async def direct_worker(run: Run, work: Iterator[tuple[Any, ...]] | AsyncWork) -> None:
    """A worker of ``run`` (``_plain_worker``, ``_worker`` or ``_async_worker``, by the type
    of ``work``) and ``Run._evaluate_sample`` in one loop, for the runs ``Run._direct``
    admits (the common one: an async target and built-in checks): the same steps, with no
    coroutine, keyword call or lookup per sample beyond the ones they need."""
    source = work if isinstance(work, AsyncWork) else None
    items = None if isinstance(work, AsyncWork) else work
    pending = source.pending if source is not None else None
    pairs = type(work) is enumerate  # (index, sample): repeat 0
    settings = run.settings
    tally = run.tally
    aggregator = run.aggregator
    add = aggregator.add
    call = run._await
    assert call is not None
    limits, redact, tracebacks = settings.trace_limits, run._redact, settings.tracebacks
    strategies = [
        (s, s.evaluate, s.name, s.position, run._timed_out[s.name], _Passed())
        for s in run.strategies
    ]
    positional = run.function.positional if call is run.function.call else None
    bare: Any = _UNSEEN  # the names of parameters seen to be all unnamed (shared tuples)
    set_recorder, reset_recorder = RECORDER.set, RECORDER.reset
    set_current, reset_current = CURRENT.set, CURRENT.reset
    row_type, result_type = EvaluationRow, EvaluationResult
    plain = run._plain
    rowless = plain and aggregator.rowless
    count_passed = aggregator.count_passed
    check = run.sample_check
    spare: Recorder | None = None
    returned = firsts = 0  # calls that returned (of repeat 0): counted as the worker ends
    repeats = settings.repeats > 1  # else every call is of repeat 0
    index: int
    sample: EvaluationSample
    repeat = 0
    busy = False  # counted in tally.in_flight: from one sample to the next without a pause
    try:
        while True:
            if items is not None:
                item = next(items, None)
                if item is None:
                    break
                if pairs:
                    index, sample = item
                else:
                    index, repeat, sample = item
            else:
                if pending:
                    index, repeat, sample = pending.popleft()
                else:
                    assert source is not None
                    if busy:  # no sample in flight while it waits for the source
                        tally.in_flight -= 1
                        busy = False
                    triple = await source.next()
                    if triple is None:
                        break
                    index, repeat, sample = triple
            if check is not None and sample.metadata:  # see Run.sample_check
                check(sample)
            if not busy:
                tally.in_flight += 1
                busy = True
            started = perf_counter()
            if spare is None:
                recorder = Recorder(limits=limits, tools=None, redact=redact)
            else:
                recorder, spare = spare, None
            token = set_recorder(recorder)
            try:
                parameters = sample.parameters
                names = parameters.names
                if names is not bare and positional is not None and not any(names):
                    bare = names
                if names is bare:
                    assert positional is not None
                    output = await positional(*parameters.values)  # call's own step
                else:
                    output = await call(parameters)
            except BaseException as exc:
                reset_recorder(token)
                await run._call_failed(exc, sample, index, repeat, started, recorder)
                continue
            reset_recorder(token)
            duration = perf_counter() - started
            trace = recorder.snapshot()
            if recorder.unmocked is not None:
                await run._add_call_failure(
                    sample, recorder.unmocked, duration, index, repeat, trace
                )
                continue
            if trace is None and getrefcount(recorder) == _UNSHARED:
                # it recorded nothing and nothing else holds it (no task or thread the
                # call started kept its context): the next sample can record into it
                spare = recorder
            returned += 1
            if repeats:
                firsts += repeat == 0
            tally.samples_done += 1
            # make_ran_current(trace), without its call: the worker records nothing here
            made = set_current(EMPTY_TRACE if trace is None else trace)
            try:
                for strategy, evaluate, name, position, timed_out, passed in strategies:
                    begun = perf_counter()  # apply_inline, without its call
                    try:
                        result = evaluate(sample, output)
                    except RERAISE:
                        raise
                    except BaseException as exc:
                        row = inline_failure(
                            strategy,
                            sample,
                            output,
                            duration,
                            index,
                            repeat,
                            trace,
                            exc,
                            begun,
                            tracebacks,
                        )
                    else:
                        if rowless:
                            if result is not passed.result and plain_pass(result):
                                passed.result = result  # frozen: the same verdict again
                                passed.score = cast("float", result.score)
                            if (
                                result is passed.result
                                and not sample.metadata
                                and type(output) is not Transcript
                            ):  # a passing row nobody keeps or reads: counted, not made
                                count_passed(sample.tags, name, passed.score)
                                tally.rows_done += 1
                                continue
                        if (
                            type(result) is result_type
                            and result.score is not None
                            and not result.skipped
                        ):
                            row = make_row(
                                sample,
                                name,
                                output,
                                _PASSED if result.passed else _FAILED,
                                result.score,
                                result.explanation,
                                result.metadata,
                                None,
                                duration,
                                perf_counter() - begun,
                                index,
                                repeat,
                                position,
                                None,
                                trace,
                            )
                        else:
                            made_row = inline_result(
                                strategy,
                                sample,
                                output,
                                duration,
                                index,
                                repeat,
                                trace,
                                result,
                                begun,
                                None,
                                timed_out,
                                tracebacks,
                                RERAISE,
                            )
                            if type(made_row) is row_type:
                                row = made_row
                            else:
                                row = await cast("Awaitable[EvaluationRow]", made_row)
                    if plain:
                        add(row)
                        tally.rows_done += 1
                    else:
                        await run._add(row)  # redacted, sent to the sinks
            finally:
                reset_current(made)
    finally:
        if busy:
            tally.in_flight -= 1
        aggregator.count_calls(returned, firsts if repeats else returned)
