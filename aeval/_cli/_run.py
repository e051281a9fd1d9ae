"""One ``aeval run``: load the samples, evaluate with a live display, write the outputs.

Ctrl-C (SIGINT) cancels the evaluation, not the program: the rows already finished are in
``rows.jsonl`` (the Scorer flushes its sinks on cancellation) and in the partial report
written next to it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
from anyio import CancelScope
from anyio.abc import TaskStatus

from .._exceptions import SampleLoadError
from .._report import EvaluationReport
from .._results import EvaluationRow
from .._run_info import RunInfo
from .._samples import Samples
from .._scorer import RowStream, Scorer
from .._sinks import JsonlSink
from ._build import Built
from ._config import HttpSpec, RunConfig
from ._http import HttpTarget, StatusRecorder, check_templates, resolve_headers
from ._progress import RunProgress

__all__ = ["ROWS_FILE", "RunResult", "execute"]

ROWS_FILE = "rows.jsonl"
_FLUSH_INTERVAL = 0.5


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced.

    Attributes:
        report: The report (partial when ``interrupted``).
        interrupted: Whether SIGINT stopped the run.
        planned: Samples × repeats the run meant to evaluate.
        files: The report files and ``rows.jsonl``.
    """

    report: EvaluationReport
    interrupted: bool
    planned: int
    files: tuple[Path, ...]


class _FlushingSink:
    """Forwards rows to a :class:`JsonlSink` and writes them out every half second.

    :meth:`run` flushes periodically (shielded, so no buffered row is lost to a
    cancellation), so ``tail -f rows.jsonl`` follows the run and an interrupted run leaves
    every finished row on disk.
    """

    def __init__(self, sink: JsonlSink) -> None:
        self._sink = sink
        self._lock = anyio.Lock()
        self._pending = False

    async def send(self, row: EvaluationRow) -> None:
        async with self._lock:
            await self._sink.send(row)
            self._pending = True

    async def flush(self) -> None:
        async with self._lock:
            await self._sink.flush()
            self._pending = False

    async def run_started(self, run: RunInfo) -> None:
        async with self._lock:
            await self._sink.run_started(run)
            self._pending = True

    async def run_finished(self, run: RunInfo) -> None:
        async with self._lock:
            await self._sink.run_finished(run)
            self._pending = True

    async def run(self) -> None:
        while True:
            await anyio.sleep(_FLUSH_INTERVAL)
            if self._pending:
                with anyio.CancelScope(shield=True):
                    await self.flush()


class _Interrupt:
    def __init__(self) -> None:
        self.received = False

    async def watch(self, scope: CancelScope, *, task_status: TaskStatus[None]) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except NotImplementedError:  # pragma: no cover - Windows: KeyboardInterrupt instead
            task_status.started()
            return
        with receiver as signals:
            task_status.started()
            async for _ in signals:
                self.received = True
                scope.cancel()
                return


async def _load(config: RunConfig) -> Samples:
    try:
        samples = await Samples.load(*config.samples)
    except SampleLoadError as exc:
        raise config.error(("samples",), str(exc)) from exc
    if config.tags:
        samples = samples.filter_by_tags(*config.tags)
        if not samples:
            raise config.error(
                ("samples", "tags"),
                f"no sample carries any of the tags {', '.join(config.tags)}",
            )
    if not samples:
        raise config.error(("samples",), "the sample sources hold no samples")
    return samples


async def execute(
    config: RunConfig,
    built: Built,
    function: Callable[..., Any] | None,
    progress: RunProgress,
) -> RunResult:
    """Evaluate ``config`` and write ``rows.jsonl`` and the reports into its output directory.

    Args:
        config: The resolved configuration.
        built: The strategies and the model clients to close at the end.
        function: The imported target, or ``None`` for an HTTP target.
        progress: The display.

    Raises:
        ConfigError: The samples cannot be loaded or do not fit the HTTP templates.
    """
    samples = await _load(config)
    strategies: tuple[object, ...] = built.strategies
    async with AsyncExitStack() as stack:
        for resource in built.resources:
            close = getattr(resource, "aclose", None)
            if close is not None:
                stack.push_async_callback(close)
        if isinstance(config.target, HttpSpec):
            spec = config.target
            check_templates(config, spec, samples)
            headers = resolve_headers(config, spec)
            limits = httpx.Limits(max_connections=config.concurrency)
            client = await stack.enter_async_context(httpx.AsyncClient(limits=limits))
            function = HttpTarget(spec, client, headers)
            strategies = tuple(StatusRecorder(strategy) for strategy in strategies)
        if function is None:  # pragma: no cover - guarded by the caller
            raise TypeError("a callable target is required")
        await anyio.Path(config.output_dir).mkdir(parents=True, exist_ok=True)
        rows_path = config.output_dir / ROWS_FILE
        sink = _FlushingSink(JsonlSink(rows_path))
        scorer = Scorer(
            config.concurrency, timeout=config.timeout, repeats=config.repeats, sinks=[sink]
        )
        planned = len(samples) * config.repeats
        interrupt = _Interrupt()
        stream: RowStream | None = None
        progress.start(planned)
        try:
            async with anyio.create_task_group() as group:
                await group.start(interrupt.watch, group.cancel_scope)
                group.start_soon(sink.run)
                async with scorer.stream(samples, function, *strategies) as rows:
                    stream = rows
                    async for row in rows:
                        progress.advance(row)
                group.cancel_scope.cancel()
        finally:
            progress.stop(interrupted=interrupt.received)
        report = stream.report if stream is not None else EvaluationReport()
        with anyio.CancelScope(shield=True):
            files = await report.save(config.output_dir, formats=config.formats)
    return RunResult(report, interrupt.received, planned, (*files, rows_path))
