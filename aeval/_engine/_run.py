"""One evaluation run of a Scorer: workers call the function under test, strategies make rows."""

from __future__ import annotations

import functools
import inspect
import itertools
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator, Sequence, Sized
from dataclasses import dataclass, replace
from time import perf_counter
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._exceptions import AbandonedCallsError
from .._reporting._report import Aggregator
from .._reporting._results import ErrorInfo, EvaluationRow
from .._reporting._run_info import RunInfo, current_git_commit
from .._samples import EvaluationSample, Parameters
from .._util._groups import unwrap_single_group
from .._version import __version__
from ..trace import Replay, Trace, TraceLimits
from ..trace._bounds import DEFAULT_LIMITS
from ..trace._context import CURRENT, EMPTY_TRACE, RECORDER, Recorder
from ..trace._recording import activate, deactivate, idle, make_ran_current
from ._apply import COUNTED, Judged, apply, retries_of, strategy_threads, stray_cancellation
from ._callables import BoundFunction, PreparedStrategy
from ._executor import (
    ExecutorJob,
    FunctionUnderTest,
    IndexedSample,
    SampleFeed,
    SampleSource,
    check_sample,
)
from ._sinks import SinkGroup
from ._threads import DaemonThreads
from ._tools import Tools, describe_tools, tool_source
from ._workers import AsyncWork, IterWork, Work, run_workers

if TYPE_CHECKING:
    from .._reporting._aggregator import KeepRows
    from ..abc import ChatModel, Executor, Sink
    from ._redact import Redactor

__all__ = [
    "RERAISE",
    "Emit",
    "Remote",
    "Run",
    "RunSettings",
    "SampleTimeout",
    "Tally",
    "TargetInterrupt",
    "retries_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """What a run takes from its Scorer, fixed when the run starts (see ``Scorer``'s args)."""

    concurrency: int
    timeout: float | None
    repeats: int
    keep: KeepRows
    tracebacks: bool
    max_abandoned: int
    sinks: tuple[Sink, ...]
    redactor: Redactor
    executor: Executor | None
    tools: Tools = "live"
    trace_limits: TraceLimits = DEFAULT_LIMITS
    user_model: ChatModel | None = None
    user_cache: Any = None
    conversation_timeout: float | None = None


class Tally:
    """What a Scorer has done over its life: counted by its runs, read by ``statistics()``."""

    __slots__ = ("in_flight", "rows_done", "runs", "samples_done")

    def __init__(self) -> None:
        self.in_flight = 0
        self.samples_done = 0
        self.rows_done = 0
        self.runs = 0


Emit = Callable[[EvaluationRow], Awaitable[None]]
"""Where a run's rows go after its sinks. One with a ``send_nowait`` method is given each row
through it first, without a coroutine, as a sink is: it returns whether it took the row,
and a row it did not take is awaited through the ``Emit`` itself."""
Remote = tuple[FunctionUnderTest, tuple[object, ...], object]
RERAISE = (AbandonedCallsError,)
"""Errors of a strategy that stop the run instead of becoming an error row."""


class TargetInterrupt(Exception):
    """The function under test raised ``KeyboardInterrupt``: the run stops, as on Ctrl-C.

    It travels out of the worker tasks as an ordinary exception (a ``KeyboardInterrupt``
    inside an asyncio task would escape the event loop and leave the run hanging) and is
    raised again as the original ``KeyboardInterrupt`` once every finished row is saved.
    """

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__("the function under test raised KeyboardInterrupt")
        self.interrupt = interrupt


class Run:
    """One evaluation run: a fixed pool of workers pulling samples from a shared source."""

    def __init__(
        self,
        settings: RunSettings,
        samples: SampleSource,
        function: BoundFunction,
        is_async: bool,
        strategies: tuple[PreparedStrategy, ...],
        tally: Tally,
    ) -> None:
        self.settings = settings
        self.tally = tally
        self.samples = samples
        self.function = function
        self.call = function.call
        self.is_async = is_async
        self.strategies = strategies
        self.aggregator = Aggregator(
            keep=settings.keep, strategies=len(strategies), repeats=settings.repeats
        )
        self.sinks = SinkGroup(settings.sinks)
        self.redactor = settings.redactor
        self._redact = settings.redactor.value if settings.redactor else None
        self._live = settings.tools == "live"
        self._idle = True
        self.finished = False
        self.interrupted: KeyboardInterrupt | None = None
        self._emit: Emit | None = None
        self._emit_nowait: Callable[[EvaluationRow], bool] | None = None
        self._threads: DaemonThreads | None = None
        self._cancelled = anyio.get_cancelled_exc_class
        self.remote: Remote | None = None
        self._warnings: list[str] = []
        self._timed_out = {
            s.name: functools.partial(_strategy_timed_out, s.name) for s in strategies
        }
        self._plain = not settings.sinks and not settings.redactor
        self._rowless = False
        self._await: Callable[[Parameters], Awaitable[Any]] | None = None
        self._positional: Callable[..., Awaitable[Any]] | None = None
        self.checked = False
        """Whether ``samples`` is a sequence of ``EvaluationSample`` already checked against
        the function (by the Scorer, before the run): its workers take them as they are."""

    async def execute(self, emit: Emit | None) -> None:
        """Run every sample; raise ``TargetInterrupt`` if the function under test asked to stop."""
        settings = self.settings
        self.tally.runs += 1
        self._emit = emit
        self._emit_nowait = getattr(emit, "send_nowait", None)
        self._plain = emit is None and not settings.sinks and not settings.redactor
        self._rowless = self._plain and self.aggregator.rowless
        self._await = self.call if self.is_async and settings.timeout is None else None
        function = self.function
        self._positional = function.positional if self._await is function.call else None
        self._cancelled = anyio.get_cancelled_exc_class
        cancelled = anyio.get_cancelled_exc_class()
        if self.remote is None:  # sync functions and sync strategies run in its threads
            self._threads = DaemonThreads(max_abandoned=settings.max_abandoned)
        workers = settings.concurrency
        expected = len(self.samples) if isinstance(self.samples, Sized) else None
        if expected is not None:
            workers = min(workers, expected * settings.repeats)
        run = RunInfo(
            started_at=time.time(),
            complete=False,
            samples_expected=expected,
            concurrency=settings.concurrency,
            repeats=settings.repeats,
            strategies=tuple(s.name for s in self.strategies),
            aeval_version=__version__,
            git_commit=await current_git_commit(),
            executor=None if settings.executor is None else settings.executor.describe(),
            tools=describe_tools(settings.tools),
        )
        self._idle = idle()  # the workers' context: nothing recorded, no trace current
        tools = settings.tools
        if isinstance(tools, Replay) and not tools.loaded:
            await tools.load()
        self.aggregator.start(run)
        complete = False
        try:
            await self.sinks.start(run)
            with unwrap_single_group(), strategy_threads(self._threads):
                if self.remote is not None:
                    await self._run_remote(self.remote)
                elif isinstance(self.samples, AsyncIterable):
                    await self._run_async_source(self.samples, max(workers, 1))
                elif settings.repeats == 1 and self.checked:
                    checked = cast("Sequence[EvaluationSample]", self.samples)
                    triples = zip(itertools.count(), itertools.repeat(0), checked)
                    await run_workers(max(workers, 1), self._worker, IterWork(triples))
                else:
                    work = IterWork(self._work(iter(self.samples)))
                    await run_workers(max(workers, 1), self._worker, work)
            self.finished = complete = True
        except TargetInterrupt as exc:
            self.interrupted = exc.interrupt
            raise
        except cancelled:
            raise
        except Exception as exc:
            done = self.aggregator.rows_added
            kept = "; they are in every sink" if settings.sinks and self.sinks.healthy else ""
            exc.add_note(f"aeval: {done} row(s) had finished when the run stopped{kept}.")
            raise
        finally:
            if self._threads is not None:
                self._threads.close()
            with anyio.CancelScope(shield=True):
                if complete and (short := self._shortfall()) is not None:
                    complete = False
                    self._warnings.append(short)
                now = time.time()
                ended = self.aggregator.run_info.replace(finished_at=now, complete=complete)
                warnings = (*self._warnings, *self.sinks.warnings)
                ended = ended.replace(warnings=(*ended.warnings, *warnings))
                await self.sinks.finish(ended)
                # a sink that failed at the end is in the report, if not in its own records
                warnings = (*self._warnings, *self.sinks.warnings)
                self.aggregator.finish(complete=complete, warnings=warnings, finished_at=now)

    def _shortfall(self) -> str | None:
        """Why a run that went through its samples is still not complete, or ``None``."""
        return self.aggregator.shortfall()

    def _work(self, samples: Iterator[object]) -> Iterator[tuple[int, int, EvaluationSample]]:
        """``(index, repeat, sample)`` of each sample of a source that is not async."""
        repeats = self.settings.repeats
        check = self.function.signature is not None and not isinstance(self.samples, Sequence)
        for position, item in enumerate(samples):
            if type(item) is IndexedSample:
                index, sample = item.index, item.sample
            else:
                index = position
                sample = check_sample(item, index)
            if check:
                self.function.check(sample)
            for repeat in range(repeats):
                yield index, repeat, sample

    async def _worker(self, work: Work) -> None:
        """The one worker loop, and the one step of a sample: take the next sample of
        ``work``, produce its output (:meth:`_produce`, the seam a run's kind overrides),
        count the sample, apply every strategy to the output and add the rows; to the end
        of the source. The strategies see the sample's trace as current (an empty one when
        nothing was recorded)."""
        take, nothing = work.take, work.nothing
        tally = self.tally
        aggregator = self.aggregator
        settings = self.settings
        checks = [(strategy, self._timed_out[strategy.name]) for strategy in self.strategies]
        count = aggregator.count_passed if self._rowless else None
        returned = firsts = 0  # calls that returned (of repeat 0): counted as the worker ends
        try:
            while True:
                try:
                    index, repeat, sample = take()
                except nothing:
                    item = await work.next()
                    if item is None:
                        break
                    index, repeat, sample = item
                tally.in_flight += 1
                try:
                    judged = await self._produce(sample, index, repeat)
                    if judged is None:
                        continue
                    returned += 1  # aggregator.count_sample(repeat=repeat), at the end
                    firsts += repeat == 0
                    tally.samples_done += 1
                    judged.count = count
                    extra = judged.extra
                    trace = judged.trace
                    if self._idle:  # make_ran_current(trace), without its cost: nothing recorded
                        current = CURRENT.set(EMPTY_TRACE if trace is None else trace)
                        made = None
                    else:
                        made = make_ran_current(trace)
                    try:
                        for strategy, timed_out in checks:
                            row = apply(
                                strategy,
                                judged,
                                seconds=settings.timeout,
                                timed_out=timed_out,
                                tracebacks=settings.tracebacks,
                                reraise=RERAISE,
                            )
                            if type(row) is not EvaluationRow:
                                row = await cast("Awaitable[EvaluationRow]", row)
                            if row is COUNTED:
                                tally.rows_done += 1
                                continue
                            if extra is not None:
                                row = replace(row, metadata={**row.metadata, **extra})
                                extra = None
                            if self._plain:
                                aggregator.add(row)
                                tally.rows_done += 1
                            else:
                                await self._add(row)
                    finally:
                        if made is None:
                            CURRENT.reset(current)
                        else:
                            deactivate(made)
                finally:
                    tally.in_flight -= 1
        finally:
            aggregator.count_calls(returned, firsts)

    async def _run_remote(self, remote: Remote) -> None:
        function, strategies, prepared = remote
        settings = self.settings
        assert settings.executor is not None
        check = self.function.check if self.function.signature is not None else None
        feed = SampleFeed(self.samples, check)
        job = ExecutorJob(
            feed=feed,
            function=function,
            strategies=strategies,
            prepared=prepared,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            repeats=settings.repeats,
            tracebacks=settings.tracebacks,
            max_abandoned=settings.max_abandoned,
            warn=self._warnings.append,
            tools=settings.tools,
            trace_limits=settings.trace_limits,
            user_model=settings.user_model,
            user_cache=settings.user_cache,
            conversation_timeout=settings.conversation_timeout,
        )
        try:
            await settings.executor.execute(job, self._deliver)
        finally:
            with anyio.CancelScope(shield=True):
                await feed.aclose()

    async def _deliver(self, rows: Sequence[EvaluationRow]) -> None:
        """Account for the rows of finished samples (each call of the function once)."""
        counted: set[tuple[int, int]] = set()
        for row in rows:
            call = (row.index, row.repeat)
            if call not in counted:
                counted.add(call)
                self.aggregator.count_sample(repeat=row.repeat, failed=row.function_failed)
                self.tally.samples_done += 1
            await self._add(row)

    async def _run_async_source(
        self, samples: AsyncIterable[EvaluationSample | IndexedSample], workers: int
    ) -> None:
        check = self.function.check if self.function.signature is not None else None
        work = AsyncWork(samples, self.settings.repeats, check)
        try:
            await run_workers(workers, self._worker, work)
        finally:
            with anyio.CancelScope(shield=True):
                await work.aclose()

    async def _call_function(self, params: Parameters) -> Any:
        if self.is_async:
            return await self.call(params)
        assert self._threads is not None
        result = await self._threads.run(self.call, params)
        if inspect.isawaitable(result):
            return await result
        return result

    async def _call_sample(self, sample: EvaluationSample) -> Any:
        """Call the function under test on ``sample``: every call but the plain await of an
        async function without a timeout (``self._await``), which ``_evaluate_sample`` makes
        itself, the hot path. A sample that needs another way to call the target (a
        conversation's turns) takes this path: test the sample beside ``self._await``."""
        timeout = self.settings.timeout
        if timeout is None:
            return await self._call_function(sample.parameters)
        return await self._call_with_timeout(sample.parameters, timeout)

    async def _produce(self, sample: EvaluationSample, index: int, repeat: int) -> Judged | None:
        """The seam of a run's kind: call the function under test on ``sample``, recording its
        trace, and return the output to judge; or add the failure's rows and return ``None``.
        A conversation's run holds the conversation here, a rescoring run reads the stored
        output."""
        settings = self.settings
        recorder: Recorder | None = None
        started = perf_counter()
        try:
            tools = None if self._live else tool_source(settings.tools, sample, repeat)
            recorder = Recorder(settings.trace_limits, tools, self._redact)
            if self._idle:  # activate(), without its cost: no trace is current here
                tokens = None
                token = RECORDER.set(recorder)
            else:
                tokens = activate(recorder)
            try:
                if self._await is not None:
                    parameters = sample.parameters
                    if self._positional is not None and not any(parameters.names):
                        output = await self._positional(*parameters.values)  # call's own step
                    else:
                        output = await self._await(parameters)
                else:
                    output = await self._call_sample(sample)
            finally:
                if tokens is None:
                    RECORDER.reset(token)
                else:
                    deactivate(tokens)
        except BaseException as exc:
            await self._call_failed(exc, sample, index, repeat, started, recorder)
            return None
        duration = perf_counter() - started
        trace = recorder.snapshot()
        if recorder.unmocked is not None:
            await self._add_call_failure(sample, recorder.unmocked, duration, index, repeat, trace)
            return None
        return Judged(sample, output, duration, index, repeat, None, trace)

    async def _call_failed(
        self,
        exc: BaseException,
        sample: EvaluationSample,
        index: int,
        repeat: int,
        started: float,
        recorder: Recorder | None,
    ) -> None:
        """The call of the function under test on ``sample`` raised ``exc``: its error rows,
        unless ``exc`` stops the run (raised again, or as ``TargetInterrupt``)."""
        failure: BaseException = exc
        if isinstance(exc, self._cancelled()):
            stray = stray_cancellation(exc, "the function under test")
            if stray is None:
                raise exc
            failure = stray
        elif isinstance(exc, AbandonedCallsError):
            raise exc
        elif isinstance(exc, KeyboardInterrupt):
            raise TargetInterrupt(exc) from None
        duration = perf_counter() - started
        trace = None if recorder is None else recorder.snapshot()
        if recorder is not None and recorder.unmocked is not None:
            failure = recorder.unmocked
        await self._add_call_failure(sample, failure, duration, index, repeat, trace)

    async def _add_call_failure(
        self,
        sample: EvaluationSample,
        exc: BaseException,
        duration: float,
        index: int,
        repeat: int,
        trace: Trace | None = None,
        *,
        output: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """One error row per strategy (one without strategies): every sample weighs the same;
        each holds what the sample's trace recorded before the failure, and ``output`` (a
        conversation's transcript so far); ``extra`` joins the first row's metadata."""
        self.aggregator.count_sample(repeat=repeat, failed=True)
        self.tally.samples_done += 1
        if isinstance(exc, SampleTimeout):
            error = ErrorInfo("TimeoutError", str(exc), None, "function")
        else:
            error = ErrorInfo.from_exception(
                exc, with_traceback=self.settings.tracebacks, source="function"
            )
        targets: list[tuple[str | None, int]] = [(s.name, s.position) for s in self.strategies]
        if not targets:
            targets.append((None, 0))
        metadata = retries_of(exc)
        if extra is not None:
            metadata = {**(metadata or {}), **extra}
        for name, position in targets:
            await self._add(
                EvaluationRow.from_error(
                    sample,
                    name,
                    output,
                    error,
                    duration=duration,
                    index=index,
                    repeat=repeat,
                    position=position,
                    metadata=metadata if position == targets[0][1] else None,
                    trace=trace,
                )
            )

    async def _call_with_timeout(self, params: Parameters, seconds: float) -> Any:
        with anyio.move_on_after(seconds) as scope:
            return await self._call_function(params)
        if scope.cancelled_caught:
            raise SampleTimeout(
                f"the function under test did not finish within {seconds:g} s (Scorer timeout)"
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _add(self, row: EvaluationRow) -> None:
        if self._redact is not None:  # a redactor with secrets: bool(self.redactor), once
            row = self.redactor.row(row)
        self.aggregator.add(row)
        self.tally.rows_done += 1
        rest = self.sinks.send_nowait(row)
        if rest:
            await self.sinks.send_rest(rest, row)
        emit = self._emit
        if emit is not None and (self._emit_nowait is None or not self._emit_nowait(row)):
            await emit(row)


def _strategy_timed_out(name: str, seconds: float) -> str:
    return f"the strategy {name} did not finish within {seconds:g} s (Scorer timeout)"


class SampleTimeout(Exception):
    """The Scorer's timeout expired on a call of the function under test or of a strategy
    (kept apart from a TimeoutError either raises)."""
