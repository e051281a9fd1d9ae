"""The Scorer: runs the function under test over samples and applies strategies."""

from __future__ import annotations

import inspect
import sys
import time
from collections import deque
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
    Sized,
)
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from time import perf_counter
from typing import Any, TypeVar

import anyio
from anyio.abc import ObjectReceiveStream

from ._aggregator import Aggregator, KeepRows
from ._callables import (
    BoundFunction,
    PreparedStrategy,
    apply_strategy,
    bind_function,
    is_async_callable,
    prepare_strategies,
)
from ._exceptions import AbandonedCallsError, ScorerClosedError
from ._executor import (
    Executor,
    ExecutorJob,
    FunctionUnderTest,
    IndexedSample,
    SampleFeed,
    SampleSource,
    check_sample,
    unindexed,
)
from ._groups import unwrap_single_group
from ._redact import Redactor
from ._report import EvaluationReport
from ._results import ErrorInfo, EvaluationRow
from ._run_info import RunInfo, current_git_commit
from ._samples import EvaluationSample, Parameters
from ._sinks import Sink, SinkGroup
from ._threads import DaemonThreads
from ._version import __version__

__all__ = [
    "FunctionUnderTest",
    "RowStream",
    "SampleSource",
    "Scorer",
    "ScorerStatistics",
    "retries_of",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ScorerStatistics:
    """What a Scorer is doing now (see :meth:`Scorer.statistics`).

    Attributes:
        concurrency: The most samples in flight at once.
        samples_in_flight: Samples being evaluated now.
        samples_done: Function calls finished, over the Scorer's life.
        rows_done: Rows produced, over the Scorer's life.
        runs: Runs started.
    """

    concurrency: int
    samples_in_flight: int
    samples_done: int
    rows_done: int
    runs: int


class Scorer:
    """Evaluates a function under test over samples with bounded concurrency.

    The function is called once per sample (per repeat): ``async def`` functions are awaited,
    plain functions run in daemon worker threads, at most ``concurrency`` at once, never on the
    event loop. Each strategy then runs, in the order given, on that output.

    Every (sample, repeat, strategy) yields exactly one row. A function under test that raises
    (``SystemExit`` and other ``BaseException`` included) or times out yields one error row per
    strategy; a strategy that raises yields an error row and the others still run.
    Cancellation propagates, and so does a ``KeyboardInterrupt`` raised by the function under
    test: the run stops as on Ctrl-C, after every finished row has reached the sinks.

    Nothing bound to an event loop is created here, so a Scorer built outside a loop works
    inside one. ``async with`` is optional; after :meth:`aclose` the Scorer refuses to run.

    Args:
        concurrency: The most samples in flight at once (>= 1).
        timeout: Seconds allowed for one call of the function under test; a call that takes
            longer becomes an error row. ``None`` (the default) waits for ever, as upstream.
        repeats: Times each sample is run (for consistency checks); rows carry ``repeat``.
        keep: Which rows the report holds: ``"all"``, ``"failures"`` or ``"none"``. Counts and
            scores always cover every row.
        sinks: Receive every row as it finishes (e.g. ``JsonlSink("run.jsonl")``). A sink
            that raises is dropped for the rest of the run and named in the report's
            ``warnings``; the other sinks and the report still get every row.
        tracebacks: Keep the formatted traceback on error rows.
        redact: Secrets (API keys, tokens) replaced by ``[REDACTED]`` in every row's output,
            explanation, metadata and error before the row reaches the sinks and the report
            (values shorter than 4 characters are left alone).
        max_abandoned: For a sync function under test with a ``timeout``: the most calls
            abandoned at their timeout that may still be running in background threads
            (default: 4 × concurrency, at least 16). One more stops the run with
            ``AbandonedCallsError``.
        executor: Where the samples run, when not in this process: e.g.
            ``aeval.ray.RayExecutor(workers=8)`` runs them on a Ray cluster, ``concurrency``
            samples at once on each worker. Rows still reach this process's report, sinks
            and stream, each sample's rows exactly once.

    Example:
        >>> async with Scorer(concurrency=5) as scorer:  # doctest: +SKIP
        ...     report = await scorer.evaluate(samples, bot.chat, ExactMatchStrategy())
    """

    def __init__(
        self,
        concurrency: int = 1,
        *,
        timeout: float | None = None,
        repeats: int = 1,
        keep: KeepRows = "all",
        sinks: Sequence[Sink] = (),
        tracebacks: bool = True,
        redact: Iterable[str] = (),
        max_abandoned: int | None = None,
        executor: Executor | None = None,
    ) -> None:
        if executor is not None and not isinstance(executor, Executor):
            raise TypeError(
                f"{executor!r} is not an executor: it needs describe(), prepare() and async "
                "execute() (e.g. aeval.ray.RayExecutor)"
            )
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
        if keep not in ("all", "failures", "none"):
            raise ValueError(f"keep must be 'all', 'failures' or 'none', got {keep!r}")
        for sink in sinks:
            if not isinstance(sink, Sink):
                raise TypeError(f"{sink!r} is not a sink: it needs async send() and flush()")
        if max_abandoned is None:
            max_abandoned = max(16, 4 * concurrency)
        elif isinstance(max_abandoned, bool) or not isinstance(max_abandoned, int):
            raise TypeError(f"max_abandoned must be an integer >= 0, got {max_abandoned!r}")
        elif max_abandoned < 0:
            raise ValueError(f"max_abandoned must be an integer >= 0, got {max_abandoned!r}")
        if isinstance(redact, str):
            raise TypeError("redact takes a list of secrets, not one string: write [secret]")
        self.max_abandoned = max_abandoned
        self.redactor = Redactor(redact)
        self.concurrency = concurrency
        self.timeout = timeout
        self.repeats = repeats
        self.keep: KeepRows = keep
        self.sinks = tuple(sinks)
        self.tracebacks = tracebacks
        self.executor = executor
        self._closed = False
        self._in_flight = 0
        self._samples_done = 0
        self._rows_done = 0
        self._runs = 0

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Scorer concurrency={self.concurrency} {state}>"

    async def __aenter__(self) -> Scorer:
        self._check_open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Close the Scorer; later calls to evaluate raise ``ScorerClosedError``.

        Closing never waits (a Scorer holds no connection or thread between runs), so it is
        a plain method; :meth:`aclose` and ``async with`` do the same.
        """
        self._closed = True

    async def aclose(self) -> None:
        """Close the Scorer (see :meth:`close`)."""
        self.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    def statistics(self) -> ScorerStatistics:
        """A snapshot of the work in flight and done."""
        return ScorerStatistics(
            self.concurrency, self._in_flight, self._samples_done, self._rows_done, self._runs
        )

    def _check_open(self) -> None:
        if self._closed:
            raise ScorerClosedError("This Scorer is closed: create a new Scorer to evaluate")

    async def evaluate(
        self,
        samples: SampleSource,
        function: FunctionUnderTest,
        *strategies: object,
    ) -> EvaluationReport:
        """Run ``function`` over ``samples`` and apply ``strategies`` to each output.

        Args:
            samples: ``Samples``, any iterable of ``EvaluationSample``, or an async iterable
                (``Samples.stream("big.jsonl")``) consumed lazily. Items may be
                :class:`IndexedSample` to keep their index in a larger dataset.
            function: ``async def f(params)`` or ``def f(params)``; receives ``Parameters``.
            *strategies: Objects with ``evaluate(sample, output)`` (sync or async) or plain
                functions with that signature.

        Returns:
            The report, rows in sample order then strategy order.

        Raises:
            ScorerClosedError: The Scorer was closed.
            TypeError: A strategy or the function is not usable, or a sample's parameters do
                not fit the function's signature (nothing ran).
            KeyboardInterrupt: The function under test raised it; every finished row is in
                the sinks.
            AbandonedCallsError: Too many timed-out sync calls are still running.
        """
        run = self._new_run(samples, function, strategies)
        try:
            await run.execute(None)
        except _TargetInterrupt as exc:
            raise exc.interrupt from None
        return run.aggregator.report()

    @asynccontextmanager
    async def stream(
        self,
        samples: SampleSource,
        function: FunctionUnderTest,
        *strategies: object,
        buffer: int | None = None,
    ) -> AsyncIterator[RowStream]:
        """Evaluate in the background and yield rows as they finish.

        ``async with scorer.stream(...) as rows: async for row in rows: ...`` yields rows in
        completion order; ``rows.report`` is the live report. Leaving the block stops the run;
        call ``await rows.finish()`` to let it complete and get the final report. Rows already
        finished stay in every sink and in the live report, also after cancellation.

        Args:
            samples: As for :meth:`evaluate`.
            function: As for :meth:`evaluate`.
            *strategies: As for :meth:`evaluate`.
            buffer: Rows that may wait unread before the run pauses (default: twice the
                concurrency), which bounds memory when the reader is slow.
        """
        run = self._new_run(samples, function, strategies)
        size = buffer if buffer is not None else 2 * self.concurrency
        send, receive = anyio.create_memory_object_stream[EvaluationRow](size)

        async def produce() -> None:
            async with send:
                with suppress(_TargetInterrupt):
                    await run.execute(send.send)

        with receive, unwrap_single_group():
            async with anyio.create_task_group() as group:
                group.start_soon(produce)
                rows = RowStream(receive, run)
                try:
                    yield rows
                finally:
                    group.cancel_scope.cancel()
        if run.interrupted is not None:
            raise run.interrupted

    def _new_run(
        self, samples: SampleSource, function: FunctionUnderTest, strategies: Sequence[object]
    ) -> _Run:
        self._check_open()
        if not callable(function):
            raise TypeError(
                f"The function under test must be callable, got {type(function).__name__}"
            )
        if isinstance(samples, str | bytes):
            raise TypeError(
                "samples must be Samples or an iterable of EvaluationSample, not a string: "
                "load a file with `await Samples.load(path)`"
            )
        if not isinstance(samples, Iterable | AsyncIterable):
            raise TypeError(
                f"samples must be Samples or an iterable of EvaluationSample, got "
                f"{type(samples).__name__}"
            )
        prepared = prepare_strategies(strategies)
        bound = bind_function(function)
        if bound.signature is not None and isinstance(samples, Sequence):
            for index, item in enumerate(samples):
                bound.check(check_sample(unindexed(item), index))
        run = _Run(self, samples, bound, is_async_callable(function), prepared)
        if self.executor is not None:
            run.remote = (function, tuple(strategies), self.executor.prepare(function, strategies))
        return run


class RowStream:
    """The rows of a running evaluation, in completion order (see :meth:`Scorer.stream`)."""

    def __init__(self, receive: ObjectReceiveStream[EvaluationRow], run: _Run) -> None:
        self._receive = receive
        self._run = run

    def __aiter__(self) -> AsyncIterator[EvaluationRow]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[EvaluationRow]:
        async for row in self._receive:
            yield row

    @property
    def report(self) -> EvaluationReport:
        """The live report: every row finished so far."""
        return self._run.aggregator.report()

    @property
    def done(self) -> bool:
        """Whether every sample has been evaluated."""
        return self._run.finished

    @property
    def interrupted(self) -> bool:
        """Whether the function under test stopped the run with ``KeyboardInterrupt``.

        Leaving the ``stream()`` block then raises that ``KeyboardInterrupt``.
        """
        return self._run.interrupted is not None

    async def finish(self) -> EvaluationReport:
        """Read the remaining rows and return the final report."""
        async for _ in self._receive:
            pass
        return self.report


Emit = Callable[[EvaluationRow], Awaitable[None]]
_Remote = tuple[FunctionUnderTest, tuple[object, ...], object]


class _TargetInterrupt(Exception):
    """The function under test raised ``KeyboardInterrupt``: the run stops, as on Ctrl-C.

    It travels out of the worker tasks as an ordinary exception (a ``KeyboardInterrupt``
    inside an asyncio task would escape the event loop and leave the run hanging) and is
    raised again as the original ``KeyboardInterrupt`` once every finished row is saved.
    """

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__("the function under test raised KeyboardInterrupt")
        self.interrupt = interrupt


class _Run:
    """One evaluation run: a fixed pool of workers pulling samples from a shared source."""

    def __init__(
        self,
        scorer: Scorer,
        samples: SampleSource,
        function: BoundFunction,
        is_async: bool,
        strategies: tuple[PreparedStrategy, ...],
    ) -> None:
        self.scorer = scorer
        self.samples = samples
        self.function = function
        self.call = function.call
        self.is_async = is_async
        self.strategies = strategies
        self.aggregator = Aggregator(
            keep=scorer.keep, strategies=len(strategies), repeats=scorer.repeats
        )
        self.sinks = SinkGroup(scorer.sinks)
        self.redactor = scorer.redactor
        self.finished = False
        self.interrupted: KeyboardInterrupt | None = None
        self._emit: Emit | None = None
        self._threads: DaemonThreads | None = None
        self._cancelled = anyio.get_cancelled_exc_class
        self.remote: _Remote | None = None
        self._warnings: list[str] = []

    async def execute(self, emit: Emit | None) -> None:
        """Run every sample; raise ``_TargetInterrupt`` if the function under test asked to stop."""
        scorer = self.scorer
        scorer._runs += 1
        self._emit = emit
        self._cancelled = anyio.get_cancelled_exc_class
        cancelled = anyio.get_cancelled_exc_class()
        if not self.is_async and self.remote is None:
            self._threads = DaemonThreads(max_abandoned=scorer.max_abandoned)
        workers = scorer.concurrency
        expected = len(self.samples) if isinstance(self.samples, Sized) else None
        if expected is not None:
            workers = min(workers, expected * scorer.repeats)
        run = RunInfo(
            started_at=time.time(),
            complete=False,
            samples_expected=expected,
            concurrency=scorer.concurrency,
            repeats=scorer.repeats,
            strategies=tuple(s.name for s in self.strategies),
            aeval_version=__version__,
            git_commit=await current_git_commit(),
            executor=None if scorer.executor is None else scorer.executor.describe(),
        )
        self.aggregator.start(run)
        complete = False
        try:
            await self.sinks.start(run)
            with unwrap_single_group():
                if self.remote is not None:
                    await self._run_remote(self.remote)
                elif isinstance(self.samples, AsyncIterable):
                    await self._run_async_source(self.samples, max(workers, 1))
                else:
                    work = self._work(iter(self.samples))
                    await _run_workers(max(workers, 1), self._worker, work)
            self.finished = complete = True
        except _TargetInterrupt as exc:
            self.interrupted = exc.interrupt
            raise
        except cancelled:
            raise
        except Exception as exc:
            done = self.aggregator.rows_added
            kept = "; they are in every sink" if scorer.sinks and self.sinks.healthy else ""
            exc.add_note(f"aeval: {done} row(s) had finished when the run stopped{kept}.")
            raise
        finally:
            if self._threads is not None:
                self._threads.close()
            with anyio.CancelScope(shield=True):
                now = time.time()
                ended = self.aggregator.run_info.replace(finished_at=now, complete=complete)
                warnings = (*self._warnings, *self.sinks.warnings)
                ended = ended.replace(warnings=(*ended.warnings, *warnings))
                await self.sinks.finish(ended)
                # a sink that failed at the end is in the report, if not in its own records
                warnings = (*self._warnings, *self.sinks.warnings)
                self.aggregator.finish(complete=complete, warnings=warnings, finished_at=now)

    def _work(self, samples: Iterator[object]) -> Iterator[tuple[int, int, Any]]:
        repeats = self.scorer.repeats
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

    async def _worker(self, work: Iterator[tuple[int, int, EvaluationSample]]) -> None:
        for index, repeat, sample in work:
            await self._evaluate_sample(sample, index, repeat)

    async def _run_remote(self, remote: _Remote) -> None:
        function, strategies, prepared = remote
        scorer = self.scorer
        assert scorer.executor is not None
        check = self.function.check if self.function.signature is not None else None
        feed = SampleFeed(self.samples, check)
        job = ExecutorJob(
            feed=feed,
            function=function,
            strategies=strategies,
            prepared=prepared,
            concurrency=scorer.concurrency,
            timeout=scorer.timeout,
            repeats=scorer.repeats,
            tracebacks=scorer.tracebacks,
            max_abandoned=scorer.max_abandoned,
            warn=self._warnings.append,
        )
        try:
            await scorer.executor.execute(job, self._deliver)
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
                self.scorer._samples_done += 1
            await self._add(row)

    async def _run_async_source(
        self, samples: AsyncIterable[EvaluationSample | IndexedSample], workers: int
    ) -> None:
        check = self.function.check if self.function.signature is not None else None
        work = _AsyncWork(samples, self.scorer.repeats, check)
        try:
            await _run_workers(workers, self._async_worker, work)
        finally:
            with anyio.CancelScope(shield=True):
                await work.aclose()

    async def _async_worker(self, work: _AsyncWork) -> None:
        while (item := await work.next()) is not None:
            index, repeat, sample = item
            await self._evaluate_sample(sample, index, repeat)

    async def _call_function(self, params: Parameters) -> Any:
        if self.is_async:
            return await self.call(params)
        assert self._threads is not None
        result = await self._threads.run(self.call, params)
        if inspect.isawaitable(result):
            return await result
        return result

    async def _evaluate_sample(self, sample: EvaluationSample, index: int, repeat: int) -> None:
        scorer = self.scorer
        scorer._in_flight += 1
        try:
            started = perf_counter()
            try:
                if scorer.timeout is None:
                    output = await self._call_function(sample.parameters)
                else:
                    output = await self._call_with_timeout(sample.parameters, scorer.timeout)
            except BaseException as exc:
                if isinstance(exc, self._cancelled() | AbandonedCallsError):
                    raise
                if isinstance(exc, KeyboardInterrupt):
                    raise _TargetInterrupt(exc) from None
                await self._add_call_failure(sample, exc, perf_counter() - started, index, repeat)
                return
            duration = perf_counter() - started
            self.aggregator.count_sample(repeat=repeat)
            scorer._samples_done += 1
            for strategy in self.strategies:
                await self._add(
                    await self._apply(strategy, sample, output, duration, index, repeat)
                )
        finally:
            scorer._in_flight -= 1

    async def _add_call_failure(
        self,
        sample: EvaluationSample,
        exc: BaseException,
        duration: float,
        index: int,
        repeat: int,
    ) -> None:
        """One error row per strategy (one without strategies): every sample weighs the same."""
        self.aggregator.count_sample(repeat=repeat, failed=True)
        self.scorer._samples_done += 1
        if isinstance(exc, _SampleTimeout):
            error = ErrorInfo("TimeoutError", str(exc), None, "function")
        else:
            error = ErrorInfo.from_exception(
                exc, with_traceback=self.scorer.tracebacks, source="function"
            )
        targets: list[tuple[str | None, int]] = [(s.name, s.position) for s in self.strategies]
        if not targets:
            targets.append((None, 0))
        metadata = retries_of(exc)
        for name, position in targets:
            await self._add(
                EvaluationRow.from_error(
                    sample,
                    name,
                    None,
                    error,
                    duration=duration,
                    index=index,
                    repeat=repeat,
                    position=position,
                    metadata=metadata if position == targets[0][1] else None,
                )
            )

    async def _call_with_timeout(self, params: Parameters, seconds: float) -> Any:
        with anyio.move_on_after(seconds) as scope:
            return await self._call_function(params)
        if scope.cancelled_caught:
            raise _SampleTimeout(
                f"the function under test did not finish within {seconds:g} s (Scorer timeout)"
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _apply(
        self,
        strategy: PreparedStrategy,
        sample: EvaluationSample,
        output: Any,
        duration: float,
        index: int,
        repeat: int,
    ) -> EvaluationRow:
        started = perf_counter()
        try:
            result = await apply_strategy(strategy.evaluate, strategy.name, sample, output)
        except Exception as exc:
            return EvaluationRow.from_error(
                sample,
                strategy.name,
                output,
                ErrorInfo.from_exception(exc, with_traceback=self.scorer.tracebacks),
                duration=duration,
                strategy_duration=perf_counter() - started,
                index=index,
                repeat=repeat,
                position=strategy.position,
                metadata=retries_of(exc),
            )
        return EvaluationRow.from_result(
            sample,
            strategy.name,
            output,
            result,
            duration=duration,
            strategy_duration=perf_counter() - started,
            index=index,
            repeat=repeat,
            position=strategy.position,
        )

    async def _add(self, row: EvaluationRow) -> None:
        if self.redactor:
            row = self.redactor.row(row)
        self.aggregator.add(row)
        self.scorer._rows_done += 1
        await self.sinks.send(row)
        if self._emit is not None:
            await self._emit(row)


def retries_of(exc: BaseException) -> dict[str, int] | None:
    """``{"retries": n}`` for an error raised after retries (a model client's), else ``None``.

    Counted on one row only, so the report's usage sums each retry once.
    """
    retries = getattr(exc, "retries", None)
    if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0:
        return {"retries": retries}
    return None


async def _run_workers(
    count: int, worker: Callable[[_T], Coroutine[Any, Any, None]], work: _T
) -> None:
    """Run ``count`` copies of ``worker(work)`` in a task group and wait for them all.

    On asyncio this is the stdlib's ``asyncio.TaskGroup`` (the same structured concurrency: the
    group owns its tasks, cancels the rest when one fails and propagates the errors); elsewhere
    an anyio task group. The reason is cost: an anyio task takes about ten times as long as an
    asyncio task to spawn and retire (measured here: ~25 µs against ~3 µs), which at a
    concurrency of 500 is several percent of a 200 ms run. Cancel scopes, ``fail_after`` and
    worker threads from anyio work unchanged inside these tasks.
    """
    asyncio = _running_asyncio()
    if asyncio is not None:
        async with asyncio.TaskGroup() as group:
            for _ in range(count):
                group.create_task(worker(work))
        return
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(worker, work)


def _running_asyncio() -> Any:
    """The ``asyncio`` module when an asyncio loop runs this task, else ``None``.

    A program that never imported asyncio is not running it, so ``import aeval`` needs no
    asyncio of its own.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return asyncio


class _AsyncWork:
    """Hands ``(index, repeat, sample)`` from an async iterable to workers, one at a time.

    Each worker pulls the next item itself under a lock, so no feeder task or channel sits
    between the source and the workers, and nothing is read ahead of the work in flight.
    """

    def __init__(
        self,
        samples: AsyncIterable[EvaluationSample | IndexedSample],
        repeats: int,
        check: Callable[[EvaluationSample], None] | None,
    ) -> None:
        self._iterator = aiter(samples)
        self._repeats = repeats
        self._check = check
        self._lock = anyio.Lock(fast_acquire=True)
        self._pending: deque[tuple[int, int, EvaluationSample]] = deque()
        self._index = 0
        self._exhausted = False

    async def next(self) -> tuple[int, int, EvaluationSample] | None:
        async with self._lock:
            if self._pending:
                return self._pending.popleft()
            if self._exhausted:
                return None
            try:
                item = await anext(self._iterator)
            except StopAsyncIteration:
                self._exhausted = True
                return None
            index = self._index
            self._index = index + 1
            if type(item) is IndexedSample:
                index, sample = item.index, item.sample
            else:
                sample = check_sample(item, index)
            if self._check is not None:
                self._check(sample)
            self._pending.extend((index, repeat, sample) for repeat in range(1, self._repeats))
            return index, 0, sample

    async def aclose(self) -> None:
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()


class _SampleTimeout(Exception):
    """The per-sample timeout expired (kept apart from a TimeoutError the function raises)."""
