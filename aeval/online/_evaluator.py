"""OnlineEvaluator: evaluate a live service's responses off the request path."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio
from anyio.abc import TaskGroup

from .._engine._callables import PreparedStrategy, prepare_strategies
from .._engine._redact import Redactor
from .._engine._sinks import Sink, SinkGroup
from .._engine._threads import DaemonThreads
from .._reporting._run_info import RunInfo, current_git_commit
from .._util._closing import AsyncClosing
from .._version import __version__
from ..trace import Trace
from ..trace._capture import Capture
from ._job import Job
from ._queue import JobQueue
from ._reading import EvaluatorState
from ._sampling import Sampler, SampleRates, review_sampler
from ._setup import check_options, sinks_of, telemetry_for, threadsafe_caller
from ._statistics import Accounts
from ._watch import watch_calls
from ._window import Window
from ._work import OnlineWork, logger

if TYPE_CHECKING:
    from .._store import RunStore

__all__ = ["OnlineEvaluator", "logger"]


_F = TypeVar("_F", bound=Callable[..., Any])
_new_job = object.__new__


def _no_context() -> None:
    """The OpenTelemetry context without OpenTelemetry: none (never called per response)."""


class OnlineEvaluator(OnlineWork, AsyncClosing):
    """Evaluates a live service's responses in the background, never slowing a request.

    Create it in the service's lifespan (``async with OnlineEvaluator(...) as online:``) and
    hand it each response with :meth:`submit` (a plain call that never raises and never waits
    for the evaluation) or by decorating the answering function with :meth:`watch`. Each
    response draws which strategies run on it (``sample_rates``: e.g. text checks on every
    response, the judge on 10 %), then waits in a bounded queue for one of ``concurrency``
    workers, which apply the drawn strategies in order, as a Scorer does. When the queue is
    full the response is **dropped and counted**, never silently: :meth:`statistics` accounts
    for every response submitted.

    Each (response, strategy) gives one row, like a row of a report, carrying the response's
    time (``row.timestamp``): rows go to the ``sink`` (e.g. ``JsonlSink``), to an in-memory
    window read with :meth:`average_score`, :meth:`window`, :meth:`by_strategy` and
    :meth:`by_tag`, and, with ``aeval-engine[otel]`` and a tracer provider, to OpenTelemetry as
    ``gen_ai.evaluation.result`` events under the span that was current at submission.

    Leaving the ``async with`` block stops accepting responses and evaluates those queued, for
    at most ``drain_timeout`` seconds (also when the block is left by a cancellation, which
    then propagates); the rest are counted as dropped (``unfinished``) and logged once on the
    ``aeval.online`` logger. The sinks are then flushed. A sink gets ``sink_timeout``
    seconds per call (a row, a flush, the run's end), also at shutdown, so a sink that hangs
    cannot hold the service: it is dropped as a sink that raises is.

    Args:
        *strategies: What a Scorer accepts: objects with ``evaluate(sample, output)``, sync
            or async, or plain functions; ``Gated`` strategies work as offline. Sync ones
            run in worker threads (the built-in text checks and those marked
            ``aeval.strategies.inline`` on the event loop), so one that blocks never stalls
            the service's loop. The sample a
            strategy receives is built from the response: its name, the inputs as
            parameters, no expected output, the tags and the metadata given at submission.
        sample_rates: The share of responses each strategy runs on, in [0, 1]: one number
            for all, a mapping by strategy name (the names rows carry; those not named run on
            every response), or a function ``(strategy_name, inputs, output) -> rate`` asked
            per response. One draw per response decides for every strategy (nested samples:
            one at 10 % runs on a subset of the responses one at 50 % runs on). Default:
            every strategy on every response.
        seed: Makes the draws reproducible for the same sequence of responses.
        queue_size: The most responses waiting for a worker; one more is dropped.
        concurrency: Responses evaluated at once (its own limit, apart from any model
            client's ``max_concurrency``).
        drain_timeout: Seconds allowed at shutdown to evaluate what is queued and in flight.
        sink: Where rows go as each response's evaluation ends: one ``Sink`` or several. A
            sink that raises is dropped (logged once); the others and the window go on.
        sink_timeout: Seconds one call of a sink may take (``send``, ``flush``, the run's
            start and end); a sink that takes longer is dropped like one that raises.
            ``None``: no limit.
        store: A run store (``aeval.RunStore``): the evaluator's rows are stored as they
            finish, as one run named ``name`` (partial until the evaluator closes), so
            ``await store.average_score(name, since=...)`` covers more than the in-memory
            window and ``aeval history`` shows the service next to offline runs.
        review_rate: The share of evaluated responses queued for human review (0-1): their
            rows carry ``review_queued: true`` in the sample's metadata, so the stored run's
            queue is ``pick_rows(report, pick="queued")`` (``aeval view --pick queued``).
            Drawn apart from ``sample_rates``, reproducibly with ``seed``.
        timeout: Seconds one strategy may take on one response; past it the row is an error
            row (``TimeoutError``). ``None``: no limit of our own (a model client has its own).
        name: Names the evaluator in logs and the responses submitted without a name
            (``{name}-{n}``).
        resolution: The window's granularity in seconds: ``since`` is rounded down to it.
        retention: Seconds of rows the window keeps (memory is bounded by time).
        flush_interval: Seconds between flushes of the sinks while the service runs
            (``None``: only at shutdown and when a sink's own buffer fills).
        redact: Secrets replaced by ``[REDACTED]`` in rows, as in the Scorer.
        tracebacks: Keep formatted tracebacks on error rows.
        otel: ``None`` reports to OpenTelemetry when it is installed; ``False`` never;
            ``True`` requires it (``MissingExtraError`` without ``aeval-engine[otel]``).
        clock: Unix time now; rows and windows use it (tests pass a fake one).

    Raises:
        TypeError, ValueError: A strategy, a rate or an option is not usable.
        MissingExtraError: ``otel=True`` without OpenTelemetry installed.

    Example:
        >>> async with OnlineEvaluator(  # doctest: +SKIP
        ...     NotBlankStrategy(), AiJudgeStrategy(judge),
        ...     sample_rates={"AiJudgeStrategy": 0.1}, sink=JsonlSink("online.jsonl"),
        ... ) as online:
        ...     online.submit({"question": q}, answer)
    """

    def __init__(
        self,
        *strategies: object,
        sample_rates: SampleRates | None = None,
        seed: int | None = None,
        queue_size: int = 1000,
        concurrency: int = 10,
        drain_timeout: float = 10.0,
        sink: Sink | Sequence[Sink] | None = None,
        sink_timeout: float | None = 10.0,
        store: RunStore | None = None,
        review_rate: float = 0.0,
        timeout: float | None = None,
        name: str = "online",
        resolution: float = 10.0,
        retention: float = 24 * 3600.0,
        flush_interval: float | None = 5.0,
        redact: Iterable[str] = (),
        tracebacks: bool = False,
        otel: bool | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not strategies:
            raise TypeError("OnlineEvaluator needs at least one strategy")
        check_options(
            queue_size=queue_size,
            concurrency=concurrency,
            drain_timeout=drain_timeout,
            timeout=timeout,
            sink_timeout=sink_timeout,
            flush_interval=flush_interval,
            redact=redact,
        )
        sinks = sinks_of(sink, store, name)
        self.strategies: tuple[PreparedStrategy, ...] = prepare_strategies(strategies)
        self.sampler = Sampler(tuple(s.name for s in self.strategies), sample_rates, seed=seed)
        self.review_rate = review_rate
        self._review = review_sampler(review_rate, seed)
        self.queue_size = queue_size
        self.concurrency = concurrency
        self.drain_timeout = float(drain_timeout)
        self.sinks = sinks
        self.timeout = timeout
        self.name = name
        self.flush_interval = flush_interval
        self.tracebacks = tracebacks
        self._redactor = Redactor(redact)
        self._redacting = bool(self._redactor)
        self._clock = clock
        self._window = Window(resolution=resolution, retention=retention)
        self._telemetry = telemetry_for(otel)
        self._capture: Callable[[], Any] | None = (
            None if self._telemetry is None else self._telemetry.capture
        )
        self._otel_context: Callable[[], Any] = (
            _no_context if self._telemetry is None else self._telemetry.context
        )
        self._draws_review = review_rate != 0
        self._state: EvaluatorState = "new"
        self._loop_thread: int | None = None
        self._call_soon: Callable[..., object] | None = None
        self._logged: set[str] = set()
        self._sink_group = SinkGroup(sinks, timeout=sink_timeout)
        self._sink_warnings = 0
        self._run: RunInfo | None = None
        self._accounts = Accounts()
        self._seq = 0
        self._queued = 0

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.strategies)
        return f"<OnlineEvaluator {self.name!r} [{names}] {self._state}>"

    # --- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> OnlineEvaluator:
        if self._state != "new":
            raise RuntimeError(
                f"this OnlineEvaluator is {self._state}: an evaluator runs once; create a new one"
            )
        self._queue: JobQueue[Job] = JobQueue(self.queue_size)
        self._sink_lock = anyio.Lock()
        self._idle = anyio.Event()
        self._idle.set()  # nothing queued yet
        self._idle_now = True  # whether _idle is set, read without its calls per response
        self._pool_done = anyio.Event()
        self._threads = DaemonThreads(max_abandoned=max(16, 4 * self.concurrency))
        self._loop_thread = threading.get_ident()
        self._call_soon = threadsafe_caller()
        self._run = RunInfo(
            started_at=self._clock(),
            complete=False,
            concurrency=self.concurrency,
            strategies=tuple(s.name for s in self.strategies),
            aeval_version=__version__,
            git_commit=await current_git_commit(),
        )
        await self._sink_group.start(self._run)
        self._log_sink_failures()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group: TaskGroup = group
        self._flusher: anyio.CancelScope | None = None
        try:
            await group.start(self._run_pool)
            if self.flush_interval is not None and self.sinks:
                await group.start(self._flush_periodically, self.flush_interval)
        except BaseException:
            group.cancel_scope.cancel()
            await group.__aexit__(*sys.exc_info())
            raise
        self._state = "running"
        return self

    async def aclose(self) -> None:
        """Stop accepting responses, drain within ``drain_timeout``, flush the sinks.

        Called when the ``async with`` block ends; calling it again does nothing.
        """
        if self._state in ("new", "closing", "closed"):
            self._state = "closed" if self._state == "new" else self._state
            return
        self._state = "closing"
        self._queue.close()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self.drain_timeout):
                await self._pool_done.wait()
            if not self._pool_done.is_set():
                self._pool_scope.cancel()
                await self._pool_done.wait()
            self._threads.close()
            if self._flusher is not None:
                self._flusher.cancel()
            while self._queue.get_nowait() is not None:
                self._accounts.unfinished += 1
            self._state = "closed"
            self._idle.set()
            self._idle_now = True
            dropped = self._accounts.dropped()
            if self._accounts.unfinished:
                logger.warning(
                    "aeval.online %r: %d response(s) could not be evaluated within the drain "
                    "timeout of %g s and were dropped (%d dropped in all, of %d submitted)",
                    self.name,
                    self._accounts.unfinished,
                    self.drain_timeout,
                    dropped,
                    self._accounts.submitted,
                )
            assert self._run is not None
            warnings = list(self._sink_group.warnings)
            if dropped:
                warnings.append(self._accounts.dropped_summary())
            ended = self._run.replace(
                finished_at=self._clock(), complete=dropped == 0, warnings=tuple(warnings)
            )
            async with self._sink_lock:
                await self._sink_group.finish(ended)
            self._log_sink_failures()
        # Outside the shield: the group's scope was entered before it. Its tasks have ended
        # (the pool) or been cancelled (the flusher), so this only collects them.
        await self._group.__aexit__(None, None, None)

    @property
    def running(self) -> bool:
        """Whether responses submitted now are accepted (inside the ``async with`` block)."""
        return self._state == "running"

    # --- submitting ------------------------------------------------------------------------

    def submit(
        self,
        inputs: Any,
        output: Any,
        *,
        name: str | None = None,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        trace: Trace | Capture | None = None,
    ) -> bool:
        """Hand one response over for evaluation; returns at once, never raises.

        Call it from the event loop the evaluator runs on (a request handler), or from any
        other thread (a sync handler run in a worker thread): from another thread the
        response is passed to the loop without waiting for it.

        Args:
            inputs: What the service was asked: a mapping becomes named parameters, a list
                or tuple positional ones, anything else one parameter.
            output: What the service answered.
            name: The response's name in rows (a request id); default ``{name}-{n}``.
            tags: Tags to break scores down by.
            metadata: Carried into the rows as the sample's metadata (also where
                ``ContainsStrategy`` reads per-response ``must_contain`` lists).
            trace: What the service did to answer (an :class:`aeval.trace.Trace`, or the
                capture of ``with aeval.trace.capture() as trace:``): kept on the rows, and
                what agent strategies check. ``online.watch`` records it by itself.

        Returns:
            Whether the response was queued for evaluation: ``False`` when it was sampled
            out or dropped (both counted), and for a call from another thread (queued later).
        """
        if trace is None or type(trace) is Trace:
            pass
        elif isinstance(trace, Capture):
            trace = trace.trace
        elif not isinstance(trace, Trace):
            self._accounts.refuse()
            self._log_once(
                "trace",
                f"submit(trace=...) takes an aeval.trace.Trace or a capture, got "
                f"{type(trace).__name__}: the response was not evaluated",
            )
            return False
        return self._submit(inputs, output, name, None, tags, metadata, 0.0, trace)

    def _submit(
        self,
        inputs: Any,
        output: Any,
        name: str | None,
        prefix: str | None,
        tags: Iterable[str],
        metadata: Mapping[str, Any] | None,
        duration: float,
        trace: Trace | None = None,
    ) -> bool:
        try:
            capture = self._capture
            job = _new_job(Job)  # Job(...) without its __init__'s call: this is per response
            job.inputs = inputs
            job.output = output
            job.name = name
            job.prefix = prefix
            job.tags = tags
            job.metadata = metadata
            job.timestamp = self._clock()
            job.span = None if capture is None or not self._otel_context() else capture()
            job.duration = duration
            job.trace = trace
            job.review = False  # seq and selected: set by _accept
            if get_ident() == self._loop_thread:
                return self._accept(job)
            call_soon = self._call_soon
            if call_soon is None or self._state != "running":
                self._accounts.refuse()
                return False
            try:
                call_soon(self._accept, job)
            except Exception:  # the loop is closed or closing
                self._accounts.refuse()
            return False
        except Exception as exc:  # a clock or tracer that failed: count, never raise
            self._accounts.refuse()
            self._log_once("submit", f"submit failed ({type(exc).__name__}: {exc})")
            return False

    def _accept(self, job: Job) -> bool:
        """Count, draw and queue one response (on the loop's thread)."""
        accounts = self._accounts
        accounts.submitted += 1
        self._seq = job.seq = self._seq + 1
        if self._state != "running":
            accounts.not_running += 1
            return False
        sampler = self.sampler
        selected = sampler._every  # every strategy on every response: nothing to draw
        if not selected:
            try:
                selected = sampler.select(job.inputs, job.output)
            except Exception as exc:
                accounts.invalid += 1
                self._log_once(
                    "rate", f"the sample rate function raised {type(exc).__name__}: {exc}"
                )
                return False
            if len(selected) < len(self.strategies):
                accounts.strategies_out += len(self.strategies) - len(selected)
                if not selected:
                    accounts.sampled_out += 1
                    return False
        job.selected = selected
        if self._draws_review:
            job.review = self._review()
        if not self._queue.put(job):
            accounts.queue_full += 1
            self._log_once(
                "full",
                f"the queue is full ({self.queue_size} waiting, {self.concurrency} in "
                "flight): responses are dropped and counted; see statistics().queue_full",
            )
            return False
        self._queued += 1
        if self._idle_now:
            self._idle = anyio.Event()
            self._idle_now = False
        return True

    @overload
    def watch(self, function: _F) -> _F: ...

    @overload
    def watch(
        self,
        *,
        name: str | None = None,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Callable[[_F], _F]: ...

    def watch(
        self,
        function: _F | None = None,
        *,
        name: str | None = None,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Any:
        """Decorate a function so that each call's parameters and result are submitted.

        ``@online.watch`` or ``@online.watch(tags=["faq"])`` on ``async def answer(question)``
        submits ``({"question": ...}, result)`` after each call that returns, and returns
        the result unchanged: whatever happens to its evaluation, the caller never sees it.
        A call that raises is not submitted (there is no answer to evaluate) and its
        exception reaches the caller unchanged. Plain functions work too (in any thread).
        Responses are named ``{name}-{n}`` (``name`` defaults to the function's name).

        Args:
            function: The function (when used without parentheses).
            name: The responses' name prefix.
            tags: Tags of every response.
            metadata: Metadata of every response.
        """
        return watch_calls(self._submit, function, name=name, tags=tags, metadata=metadata)
