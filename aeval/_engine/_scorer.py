"""The Scorer: runs the function under test over samples and applies strategies."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence, Sized
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from os import PathLike
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._exceptions import ScorerClosedError
from .._reporting._aggregator import KeepRows
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow
from .._samples import EvaluationSample
from .._util._closing import AsyncClosing
from .._util._groups import unwrap_single_group
from ..abc import ChatModel
from ..trace import TraceLimits
from ._apply import retries_of
from ._callables import BoundFunction, bind_function, is_async_callable, prepare_strategies
from ._conversation import ConversationRun, check_conversation_kinds, takes_conversation
from ._executor import Executor, FunctionUnderTest, SampleSource, check_sample, unindexed
from ._progress import RunProgress, progress_for
from ._redact import Redactor
from ._run import Emit, Run, RunSettings, Tally, TargetInterrupt
from ._simulated import UserModel
from ._sinks import Sink
from ._tools import Tools, check_tools

__all__ = [
    "FunctionUnderTest",
    "RowStream",
    "SampleSource",
    "Scorer",
    "ScorerStatistics",
    "retries_of",
]


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


class Scorer(AsyncClosing):
    """Evaluates a function under test over samples with bounded concurrency.

    The function is called once per sample (per repeat): ``async def`` functions are awaited,
    plain functions run in daemon worker threads, at most ``concurrency`` at once, never on the
    event loop. Each strategy then runs, in the order given, on that output: sync strategies in
    those threads too (a strategy that blocks cannot stall the loop, and ``timeout`` bounds
    it), except the built-in text checks, which are pure and cheap and run on the loop, and
    those marked :func:`aeval.strategies.inline` (on the loop too, where ``timeout`` cannot
    interrupt them).

    Every (sample, repeat, strategy) yields exactly one row. A function under test that raises
    (``SystemExit`` and other ``BaseException`` included) or times out yields one error row per
    strategy; a strategy that raises yields an error row and the others still run.
    Cancellation propagates, and so does a ``KeyboardInterrupt`` raised by the function under
    test: the run stops as on Ctrl-C, after every finished row has reached the sinks. A
    ``CancelledError`` raised while the run is not being cancelled (the function or a strategy
    awaited a task that something else cancelled) is an error row of type ``CancelledError``.

    Nothing bound to an event loop is created here, so a Scorer built outside a loop works
    inside one. ``async with`` is optional; after :meth:`aclose` the Scorer refuses to run.

    Args:
        concurrency: The most samples in flight at once (>= 1). The default, 1, evaluates one
            sample at a time, as upstream does, so that a function under test that is not
            safe to call concurrently stays correct; raise it to evaluate faster (the
            ``aeval`` command's ``concurrency:`` defaults to 4).
        timeout: Seconds allowed for one call of the function under test, and for one
            strategy on one output; a call that takes longer becomes an error row
            (``TimeoutError``). ``None`` (the default) waits for ever, as upstream.
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
        max_abandoned: For a sync function or strategy with a ``timeout``: the most calls
            abandoned at their timeout that may still be running in background threads
            (default: 4 × concurrency, at least 16). One more stops the run with
            ``AbandonedCallsError``.
        executor: Where the samples run, when not in this process: e.g.
            ``aeval.ray.RayExecutor(workers=8)`` runs them on a Ray cluster, ``concurrency``
            samples at once on each worker. Rows still reach this process's report, sinks
            and stream, each sample's rows exactly once.
        progress: Show the run's progress on stderr, as ``aeval run`` does: a live bar on a
            terminal or in a notebook (rich), else a line each tenth of the run.
        tools: Where ``@aeval.tool`` functions get their results: ``"live"`` (the default)
            calls them; ``"fixtures"`` serves each sample's ``tools:`` fixtures;
            ``aeval.trace.Replay(ref)`` serves the results recorded in a stored run. A call
            with nothing to serve makes the sample's rows error rows of type
            ``UnmockedToolCall`` (never a live call), even if the function caught it.
        trace_limits: How much of each recorded argument and result a row's trace keeps
            (``aeval.trace.TraceLimits``).
        user_model: The chat model that plays the simulated users of conversation samples
            (``user:``); see docs/conversations-engine.md.
        user_cache: A :class:`~aeval.JudgeCache` the user model's calls go through.
        conversation_timeout: Seconds one whole conversation may take (``timeout`` bounds
            each of its turns); a conversation that takes longer is error rows whose output
            is the transcript so far.

    A conversation sample (``turns:`` or ``user:``) is one conversation per repeat: its
    target is called once per user turn with an ``aeval.Conversation``, and its rows' output
    is the ``aeval.Transcript`` (see docs/conversations-engine.md).

    Each (sample, repeat) is traced: the tool calls, model calls and retrievals made while
    it ran are its rows' ``trace`` (``None`` when nothing was recorded), also on error rows,
    and strategies see it through ``aeval.trace.current()``.

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
        progress: bool = False,
        tools: Tools = "live",
        trace_limits: TraceLimits | None = None,
        user_model: ChatModel | None = None,
        user_cache: Any = None,
        conversation_timeout: float | None = None,
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
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True or False, got {progress!r}")
        self.tools: Tools = check_tools(tools)
        if trace_limits is not None and not isinstance(trace_limits, TraceLimits):
            raise TypeError(
                "trace_limits must be an aeval.trace.TraceLimits, got "
                f"{type(trace_limits).__name__}"
            )
        self.trace_limits = TraceLimits() if trace_limits is None else trace_limits
        if isinstance(redact, str):
            raise TypeError("redact takes a list of secrets, not one string: write [secret]")
        if conversation_timeout is not None and not conversation_timeout > 0:
            raise ValueError(
                "conversation_timeout must be a positive number of seconds, got "
                f"{conversation_timeout!r}"
            )
        self.user_model = user_model
        self.user_cache = user_cache
        self._user = None if user_model is None else UserModel(user_model, user_cache)
        self.conversation_timeout = conversation_timeout
        self.max_abandoned = max_abandoned
        self.redactor = Redactor(redact)
        self.concurrency = concurrency
        self.timeout = timeout
        self.repeats = repeats
        self.keep: KeepRows = keep
        self.sinks = tuple(sinks)
        self.tracebacks = tracebacks
        self.executor = executor
        self.progress = progress
        self._closed = False
        self._tally = Tally()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Scorer concurrency={self.concurrency} {state}>"

    async def __aenter__(self) -> Scorer:
        self._check_open()
        return self

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
        tally = self._tally
        return ScorerStatistics(
            self.concurrency, tally.in_flight, tally.samples_done, tally.rows_done, tally.runs
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
            function: ``async def chat(question)`` or ``def chat(question)`` receives the
                sample's values (by position, or by name); ``async def f(params)``, or a
                first parameter annotated ``Parameters``, receives the ``Parameters``.
                A conversation target (first parameter annotated ``aeval.Conversation``) is
                called once per user turn of conversation samples (``turns``/``user``).
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
        progress = self._start_progress(run)
        try:
            await run.execute(_advancing(None, progress))
        except TargetInterrupt as exc:
            raise exc.interrupt from None
        finally:
            if progress is not None:
                progress.stop(interrupted=not run.finished)
        return run.aggregator.report()

    async def rescore(
        self,
        source: EvaluationReport | str | PathLike[str],
        *strategies: object,
        store: Any = None,
    ) -> EvaluationReport:
        """Apply ``strategies`` to the outputs and traces of a run already made, calling
        nothing: how a new check reaches last week's run, or stored live traffic.

        Each (sample, repeat) of the stored run yields one row per strategy, with its stored
        output, duration and trace (strategies see the trace through
        :func:`aeval.trace.current`, as in a run); a sample whose function call failed gives
        its error rows again. Unchanged strategies give the same verdicts, scores and
        explanations as the stored rows. The strategies run in this process, on its event
        loop and worker threads, also when the Scorer has an ``executor``: an executor is
        where the function under test runs, and a rescore calls none.

        Example::

            report = await scorer.rescore("latest", ToolCalledStrategy("get_weather"))

        Args:
            source: A report that holds its rows, a run's ``rows.jsonl`` or ``report.json``,
                or a stored run's ref (``latest``, a run id, ``NAME@latest~1``).
            *strategies: As for :meth:`evaluate` (at least one).
            store: The run store refs are read from (a ``RunStore`` or its path); when
                ``None``, ``$AEVAL_STORE``, else ``.aeval/runs.sqlite``.

        Returns:
            The new report; its rows go to the Scorer's sinks as in a run.

        Raises:
            ScorerClosedError: The Scorer was closed.
            ComparisonError: The source cannot be read, naming it.
            ValueError: The source holds no rows.
            TypeError: No strategy, or one that is not usable.
        """
        self._check_open()
        from ._rescore import rescore_report

        return await rescore_report(self, source, strategies, tally=self._tally, store=store)

    def _start_progress(self, run: Run) -> RunProgress | None:
        if not self.progress:
            return None
        progress = progress_for(len(run.strategies))
        samples = run.samples
        progress.start(len(samples) * self.repeats if isinstance(samples, Sized) else 0)
        return progress

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
            progress = self._start_progress(run)
            try:
                async with send:
                    with suppress(TargetInterrupt):
                        await run.execute(_advancing(_Sender(send), progress))
            finally:
                if progress is not None:
                    progress.stop(interrupted=not run.finished)

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
    ) -> Run:
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
        kind = takes_conversation(function)
        bound = bind_function(function)
        if kind is not False:  # takes the conversation (or the parameters) whole
            bound = BoundFunction(function, None, bound.name)
        checked = False
        if isinstance(samples, Sequence):
            check_conversation_kinds(kind, bound.name, samples, user_model=self._user is not None)
            if bound.signature is not None:
                for index, item in enumerate(samples):
                    bound.check(check_sample(unindexed(item), index))
            checked = not samples or set(map(type, samples)) == {EvaluationSample}
        settings = RunSettings(
            concurrency=self.concurrency,
            timeout=self.timeout,
            repeats=self.repeats,
            keep=self.keep,
            tracebacks=self.tracebacks,
            max_abandoned=self.max_abandoned,
            sinks=self.sinks,
            redactor=self.redactor,
            executor=self.executor,
            tools=self.tools,
            trace_limits=self.trace_limits,
            user_model=self.user_model,
            user_cache=self.user_cache,
            conversation_timeout=self.conversation_timeout,
        )
        parts = (settings, samples, bound, is_async_callable(function), prepared, self._tally)
        if kind is False and isinstance(samples, Sequence):
            run = Run(*parts)
        else:
            run = ConversationRun(
                *parts,
                kind=kind,
                user_model=self._user,
                conversation_timeout=self.conversation_timeout,
            )
        run.checked = checked
        if self.executor is not None:
            run.remote = (function, tuple(strategies), self.executor.prepare(function, strategies))
        return run


class _Sender:
    """Puts each row in the stream's buffer without yielding to the reader for each one.

    A row that fits in the buffer goes in at once (:meth:`send_nowait`, the sinks'
    convention, called by the run without a coroutine); the worker that finished it goes
    on, and the reader, woken once, takes every row buffered by then
    (:meth:`RowStream._iterate`). A full buffer waits for the reader, as before.
    """

    __slots__ = ("_put", "_send")

    def __init__(self, send: MemoryObjectSendStream[EvaluationRow]) -> None:
        self._send = send
        self._put = send.send_nowait

    def send_nowait(self, row: EvaluationRow) -> bool:
        """Buffer ``row`` if it fits, and say whether it did (else await the sender)."""
        try:
            self._put(row)
        except anyio.WouldBlock:
            return False
        return True

    async def __call__(self, row: EvaluationRow) -> None:
        if not self.send_nowait(row):
            await self._send.send(row)


def _advancing(emit: Emit | None, progress: RunProgress | None) -> Emit | None:
    """``emit``, also moving ``progress`` on with each row."""
    if progress is None:
        return emit

    async def advance(row: EvaluationRow) -> None:
        progress.advance(row)
        if emit is not None:
            await emit(row)

    return advance


class RowStream:
    """The rows of a running evaluation, in completion order (see :meth:`Scorer.stream`)."""

    def __init__(self, receive: MemoryObjectReceiveStream[EvaluationRow], run: Run) -> None:
        self._receive = receive
        self._run = run

    def __aiter__(self) -> AsyncIterator[EvaluationRow]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[EvaluationRow]:
        receive = self._receive
        while True:
            try:
                row = receive.receive_nowait()
            except anyio.WouldBlock:
                try:
                    row = await receive.receive()
                except anyio.EndOfStream:
                    return
            except anyio.EndOfStream:
                return
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
