"""The working half of an online evaluator: its workers take queued responses, apply the drawn
strategies and deliver the rows to the window, the sinks and OpenTelemetry."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from time import perf_counter
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskStatus

from .._engine._apply import apply, strategy_threads, stray_cancellation
from .._engine._callables import PreparedStrategy
from .._engine._redact import Redactor
from .._engine._sinks import Sink, SinkGroup
from .._engine._threads import DaemonThreads
from .._reporting._results import EvaluationRow, Outcome
from ..trace._context import CURRENT, RECORDER, Tokens
from ..trace._recording import deactivate, make_current
from ._job import Job, apply_to_job, timed_out
from ._queue import JobQueue
from ._reading import OnlineReading

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["OnlineWork", "logger"]

logger = logging.getLogger("aeval.online")
_ERROR = Outcome.ERROR
_recorder = RECORDER.get
_current_trace = CURRENT.get
_TURN = 0.0005
"""Seconds a worker goes on taking queued responses before it lets the event loop have a
turn: queued ones are evaluated without a turn each (a turn costs more than a cheap check),
and the loop is never held much longer than this per worker (one response's evaluation at
most)."""


class OnlineWork(OnlineReading):
    """The workers of :class:`OnlineEvaluator` and the delivery of their rows."""

    name: str
    timeout: float | None
    tracebacks: bool
    sinks: tuple[Sink, ...]
    strategies: tuple[PreparedStrategy, ...]
    _queue: JobQueue[Job]
    _queued: int
    _idle_now: bool
    _threads: DaemonThreads
    _pool_scope: anyio.CancelScope
    _pool_done: anyio.Event
    _flusher: anyio.CancelScope | None
    _redactor: Redactor
    _redacting: bool
    _telemetry: Any
    _sink_group: SinkGroup
    _sink_lock: anyio.Lock
    _sink_warnings: int
    _logged: set[str]

    async def _run_pool(self, *, task_status: TaskStatus[None]) -> None:
        """The workers, shielded: a cancelled lifespan still drains within the deadline."""
        try:
            with anyio.CancelScope(shield=True) as scope, strategy_threads(self._threads):
                self._pool_scope = scope
                async with anyio.create_task_group() as group:
                    for _ in range(self.concurrency):
                        group.start_soon(self._worker)
                    task_status.started()
        finally:
            self._pool_done.set()

    async def _worker(self) -> None:
        queue = self._queue
        accounts = self._accounts
        turn_ends = 0.0
        while True:
            job: Job | None = None
            if perf_counter() < turn_ends:  # queued responses, without a turn of the loop each
                job = queue.get_nowait()
            if job is None:
                job = await queue.get()
                if job is None:
                    return
                turn_ends = perf_counter() + _TURN
            self._queued -= 1
            accounts.in_flight += 1
            settled = False
            try:
                pending = self._evaluate(job)
                if pending is not None:
                    await pending
                settled = True
            except BaseException as exc:
                cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
                if cancelled and stray_cancellation(exc, "the evaluation") is None:
                    raise
                accounts.crashed += 1
                settled = True
                logger.error(
                    "aeval.online %r: the evaluation of response %d stopped on %s outside the "
                    "strategies; the response is dropped (statistics().crashed) and the worker "
                    "goes on with the next one",
                    self.name,
                    job.seq,
                    type(exc).__name__,
                    exc_info=exc,
                )
            finally:
                accounts.in_flight -= 1
                if not settled:  # cancelled at the drain deadline
                    accounts.unfinished += 1
                if not accounts.in_flight and not self._queued:
                    self._idle.set()
                    self._idle_now = True

    def _evaluate(self, job: Job) -> Awaitable[None] | None:
        """Evaluate ``job`` and deliver its rows: at once (``None``) when its strategies give
        their rows at once and no sink is waited for, else the awaitable that finishes it."""
        try:
            sample = job.sample(self.name)
        except Exception as exc:
            self._accounts.invalid += 1
            self._log_once("sample", f"a response could not become a sample: {exc}")
            return None
        trace = job.trace
        if trace is None and _recorder() is None and _current_trace() is None:
            made = None  # trace.idle(): nothing to make current
        else:
            made = make_current(trace)  # using(trace)
        try:
            rows: list[EvaluationRow] = []
            strategies = self.strategies
            judged = job.judged(sample)
            for i in job.selected:
                row = apply(
                    strategies[i],
                    judged,
                    seconds=self.timeout,
                    timed_out=timed_out,
                    tracebacks=self.tracebacks,
                )
                if type(row) is not EvaluationRow:
                    handed, made = made, None  # the rest deactivates it
                    return self._evaluate_rest(job, sample, rows, row, handed)
                rows.append(row)
        finally:
            if made is not None:
                deactivate(made)
        return self._deliver(rows, job)

    async def _evaluate_rest(
        self,
        job: Job,
        sample: EvaluationSample,
        rows: list[EvaluationRow],
        pending: EvaluationRow | Awaitable[EvaluationRow],
        made: Tokens | None,
    ) -> None:
        """:meth:`_evaluate` from the first row that has to be awaited (``pending``)."""
        try:
            rows.append(await cast("Awaitable[EvaluationRow]", pending))
            for i in job.selected[len(rows) :]:
                row = apply_to_job(
                    self.strategies[i],
                    sample,
                    job,
                    seconds=self.timeout,
                    tracebacks=self.tracebacks,
                )
                if type(row) is not EvaluationRow:
                    row = await cast("Awaitable[EvaluationRow]", row)
                rows.append(row)
        finally:
            if made is not None:
                deactivate(made)
        delivering = self._deliver(rows, job)
        if delivering is not None:
            await delivering

    def _deliver(self, rows: list[EvaluationRow], job: Job) -> Awaitable[None] | None:
        """Count ``rows`` in the window and the accounts, then send them: at once without
        sinks (``None``), else the awaitable that sends them to the sinks."""
        if self._redacting:
            rows = [self._redactor.row(row) for row in rows]
        self._window.add(rows, self._clock())
        accounts = self._accounts
        accounts.rows += len(rows)
        for row in rows:
            if row.outcome is _ERROR:
                accounts.errors += 1
        if self.sinks:
            return self._to_sinks(rows, job)
        if job.span is None:  # _report(rows, job), without its call
            accounts.evaluated += 1
        else:
            self._report(rows, job)
        return None

    async def _to_sinks(self, rows: list[EvaluationRow], job: Job) -> None:
        with anyio.CancelScope(shield=True):  # delivered whole, also at the deadline
            async with self._sink_lock:
                for row in rows:
                    await self._sink_group.send(row)
            self._log_sink_failures()
            self._report(rows, job)

    def _report(self, rows: list[EvaluationRow], job: Job) -> None:
        """Report ``rows`` to OpenTelemetry, and count the response evaluated."""
        if job.span is not None and self._telemetry is not None:
            try:
                self._telemetry.emit(job.span, rows, rows[0].name)
            except Exception as exc:
                self._log_once("otel", f"OpenTelemetry failed ({type(exc).__name__}: {exc})")
        self._accounts.evaluated += 1

    async def _flush_periodically(self, interval: float, *, task_status: TaskStatus[None]) -> None:
        with anyio.CancelScope() as scope:
            self._flusher = scope
            task_status.started()
            while True:
                await anyio.sleep(interval)
                async with self._sink_lock:
                    await self._sink_group.flush()
                self._log_sink_failures()

    # --- helpers ---------------------------------------------------------------------------

    def _log_once(self, key: str, message: str) -> None:
        if key not in self._logged:
            self._logged.add(key)
            logger.warning("aeval.online %r: %s (logged once)", self.name, message)

    def _log_sink_failures(self) -> None:
        warnings = self._sink_group.warnings
        while self._sink_warnings < len(warnings):
            logger.warning("aeval.online %r: %s", self.name, warnings[self._sink_warnings])
            self._sink_warnings += 1
