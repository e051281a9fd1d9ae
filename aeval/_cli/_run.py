"""One ``aeval run``: load the samples, evaluate with a live display, write the outputs.

Ctrl-C (SIGINT), SIGTERM (CI systems, Kubernetes) and SIGHUP (a closed terminal or SSH
session) cancel the evaluation, not the program:
the rows already finished are in ``rows.jsonl`` (the Scorer flushes its sinks on
cancellation) and in the partial report written next to it. So does a target that raises
``KeyboardInterrupt``, and an error that stops the run.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    Sized,
)
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio import CancelScope
from anyio.abc import TaskStatus

from .._engine._callables import bind_function
from .._engine._conversation import check_conversation_kind, takes_conversation
from .._engine._executor import Executor
from .._engine._http_target import (
    HttpSpec,
    HttpTarget,
    StatusRecorder,
    TemplateError,
    check_templates,
    header_secrets,
    resolve_headers,
)
from .._engine._progress import RunProgress
from .._engine._run import Run, TargetInterrupt
from .._engine._scorer import Scorer
from .._engine._shards import Shard
from .._engine._sinks import JsonlSink
from .._engine._tools import Tools
from .._exceptions import ExecutorError, MissingExtraError, SampleLoadError
from .._reporting._aggregator import KeepRows
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow
from .._reporting._run_info import Gate, RunInfo
from .._samples import EvaluationSample, Samples
from .._samples._sources import (
    BatchedStream,
    CountedStream,
    batches_of,
    count_lines,
    is_url,
    streams,
)
from .._util._groups import unwrap_single_group
from ..abc import BaseSink
from ._build import Built
from ._config import ConfigError, RunConfig
from ._scale import ShardedSamples, split
from ._summary import error_types

if TYPE_CHECKING:
    from .._store import StoreSink

__all__ = ["ROWS_FILE", "STOP_SIGNALS", "GateDecision", "RunResult", "execute", "signals_kept"]

ROWS_FILE = "rows.jsonl"
_FLUSH_INTERVAL = 0.5


MAX_WHOLE_FILE_BYTES = 100_000_000
"""YAML and JSON sample files larger than this are refused with advice to write JSONL."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced.

    Attributes:
        report: The report (partial when the run was stopped).
        interrupted: What stopped the run early: ``"SIGINT"``, ``"SIGTERM"``, ``"SIGHUP"``
            or ``"KeyboardInterrupt"`` (raised by the target); ``None`` when nothing did.
        error: The error that stopped the run (too many abandoned calls, a bad sample in a
            stream, …); the report is then partial.
        files: The report files and ``rows.jsonl``.
        run_id: The run's id in the run store (``None`` when not recorded).
        error_types: The error rows per exception type, over every row of the run.
    """

    report: EvaluationReport
    interrupted: str | None
    error: Exception | None
    files: tuple[Path, ...]
    run_id: str | None = None
    error_types: Mapping[str, int] = field(default_factory=dict)


GateDecision = Callable[[EvaluationReport, Mapping[str, int], bool], Gate]
"""Decides a run's gate: from the report, its error rows per type, whether it finished."""


class _FlushingSink:
    """Forwards rows to a sink (``rows.jsonl``, the run store) and flushes it every half second.

    :meth:`run` flushes periodically (shielded, so no buffered row is lost to a
    cancellation), so ``tail -f rows.jsonl`` follows the run and an interrupted run leaves
    every finished row on disk. A periodic flush that fails does not stop the run: the
    sink's next call raises the same error, so the Scorer drops the sink and says so, as
    for any failing sink.

    One call reaches the sink at a time (a write must not overlap another). A call that finds
    the sink busy waits until it is idle, with every other waiting call: not a lock handed
    from task to task, which at a row per worker would keep every worker queued for it.
    Rows go straight to a :class:`JsonlSink`, whose calls may overlap: :attr:`send` and
    :attr:`send_nowait` are then the sink's own (no call of this wrapper per row) until a
    periodic flush fails.
    """

    send: Callable[[EvaluationRow], Coroutine[Any, Any, None]]
    """Send one row: the sink's own ``send`` for a :class:`JsonlSink`, else one at a time."""
    send_nowait: Callable[[EvaluationRow], bool]
    """For a :class:`JsonlSink` only: its own ``send_nowait`` (a row buffered without a
    coroutine), until a periodic flush fails."""

    def __init__(self, sink: BaseSink, facts: Mapping[str, Any] | None = None) -> None:
        self._sink = sink
        self._jsonl = sink if type(sink) is JsonlSink else None
        self.send = self._jsonl.send if self._jsonl is not None else self._send_alone
        if self._jsonl is not None:
            self.send_nowait = self._jsonl.send_nowait
        self._flushed_rows = 0
        self._busy = False
        self._idle: anyio.Event | None = None
        self._pending = False
        self._facts = dict(facts or {})
        self._failed: Exception | None = None

    def __repr__(self) -> str:
        return repr(self._sink)

    def _check(self) -> None:
        if self._failed is not None:
            raise self._failed

    async def _enter(self) -> None:
        while self._busy:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()
        self._busy = True

    def _leave(self) -> None:
        self._busy = False
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.set()

    async def _send_alone(self, row: EvaluationRow) -> None:
        if self._busy:
            await self._enter()
        else:
            self._busy = True
        try:
            self._check()
            await self._sink.send(row)
            self._pending = True
        finally:
            self._leave()

    async def _refuse(self, row: EvaluationRow) -> None:
        self._check()

    def _unflushed(self) -> bool:
        jsonl = self._jsonl
        return self._pending or (jsonl is not None and jsonl.rows_written != self._flushed_rows)

    @asynccontextmanager
    async def _alone(self) -> AsyncIterator[None]:
        await self._enter()
        try:
            yield
        finally:
            self._leave()

    async def flush(self) -> None:
        async with self._alone():
            self._check()
            rows = self._jsonl.rows_written if self._jsonl is not None else 0
            await self._sink.flush()
            self._pending = False
            self._flushed_rows = rows

    async def run_started(self, run: RunInfo) -> None:
        async with self._alone():
            await self._sink.run_started(run.replace(**self._facts))
            self._pending = True

    async def run_finished(self, run: RunInfo) -> None:
        async with self._alone():
            self._check()
            await self._sink.run_finished(run.replace(**self._facts))
            self._pending = True

    async def run(self) -> None:
        while self._failed is None:
            await anyio.sleep(_FLUSH_INTERVAL)
            if self._unflushed():
                with anyio.CancelScope(shield=True):
                    try:
                        await self.flush()
                    except Exception as exc:
                        self._failed = exc
                        self.send = self._refuse
                        self.send_nowait = _not_now


def _not_now(row: EvaluationRow) -> bool:
    return False


async def _evaluate(run: Run) -> None:
    with suppress(TargetInterrupt):
        await run.execute(None)


class _RowTally:
    """The last sink of ``aeval run`` when it shows its progress or its report keeps no row:
    counts the error rows per exception type and moves the display on as each row arrives
    (without a coroutine); it keeps no row."""

    def __init__(self, progress: RunProgress | None) -> None:
        self.types: Counter[str] = Counter()
        self._advance = None if progress is None else progress.advance

    def __repr__(self) -> str:
        return "the run's tally"

    def send_nowait(self, row: EvaluationRow) -> bool:
        if self._advance is not None:
            self._advance(row)
        if row.error is not None:
            self.types[row.error.type] += 1
        return True

    async def send(self, row: EvaluationRow) -> None:
        self.send_nowait(row)

    async def flush(self) -> None:
        pass


STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that stop a run cleanly (SIGHUP: the terminal or the SSH session went away)."""


class _Stop:
    """Turns SIGINT, SIGTERM and SIGHUP into a cancellation of the run (not of the program).

    The first signal decides: its name is the reason, whatever arrives after it. Once one
    was received, later ones are ignored until the command ends (see :func:`signals_kept`),
    so a second signal cannot cut the reports or the summary short, nor change the exit code.
    """

    def __init__(self) -> None:
        self.reason: str | None = None

    async def watch(self, scope: CancelScope, *, task_status: TaskStatus[None]) -> None:
        receiver = anyio.open_signal_receiver(*STOP_SIGNALS)
        try:
            signals = receiver.__enter__()
        except (NotImplementedError, RuntimeError, ValueError):
            # Windows, or not the main thread (main() called from a worker thread): Ctrl-C
            # then arrives as KeyboardInterrupt, and SIGTERM ends the process as usual
            task_status.started()
            return
        try:
            task_status.started()
            async for received in signals:
                if self.reason is None:
                    self.reason = signal.Signals(received).name
                    scope.cancel()
        finally:
            receiver.__exit__(None, None, None)
            if self.reason is not None:
                with suppress(ValueError):
                    for each in STOP_SIGNALS:
                        signal.signal(each, signal.SIG_IGN)


@contextmanager
def signals_kept() -> Iterator[None]:
    """Restore, on leaving, the handlers of :data:`STOP_SIGNALS` (which a stopped run
    leaves ignored until the command has printed its verdict)."""
    try:
        previous = [(each, signal.getsignal(each)) for each in STOP_SIGNALS]
    except ValueError:  # pragma: no cover - not the main thread
        previous = []
    try:
        yield
    finally:
        with suppress(ValueError, TypeError):
            for each, handler in previous:
                signal.signal(each, handler)


async def _check_sizes(config: RunConfig) -> None:
    for index, source in enumerate(config.samples):
        if is_url(source) or streams(source):
            continue
        try:
            size = (await anyio.Path(source).stat()).st_size
        except OSError:
            continue
        if size > MAX_WHOLE_FILE_BYTES:
            raise config.error(
                ("samples", index),
                f"{source} is {size / 1e6:.0f} MB; YAML and JSON files are read whole, which "
                f"takes several times that in memory (the limit is "
                f"{MAX_WHOLE_FILE_BYTES // 1_000_000} MB). Write the samples as JSONL (one JSON "
                "object per line, the same keys): aeval streams JSONL with flat memory.",
            )


def _source_key(config: RunConfig, index: int) -> tuple[str | int, ...]:
    for key in (("samples", index), ("samples", "paths", index), ("samples", "paths")):
        if key in config.lines:
            return key
    return ("samples",)


async def _check_files(config: RunConfig) -> None:
    """Each sample file exists; the message says where relative paths start."""
    for index, source in enumerate(config.samples):
        if is_url(source) or await anyio.Path(source).is_file():
            continue
        what = "is not a file" if await anyio.Path(source).exists() else "no such file"
        raise config.error(
            _source_key(config, index),
            f"{source}: {what} (relative paths in {config.path.name} start at its folder, "
            f"{config.directory.resolve()}): check the path",
        )


async def _load(config: RunConfig) -> Samples:
    await _check_files(config)
    await _check_sizes(config)
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


async def _stream(config: RunConfig) -> CountedStream | AsyncIterable[EvaluationSample]:
    """The samples of JSONL sources, read lazily (memory stays flat as the dataset grows)."""
    await _check_files(config)
    count = await anyio.to_thread.run_sync(count_lines, config.samples)
    if not count:
        raise config.error(("samples",), "the sample sources hold no samples")
    stream = CountedStream(config.samples, count)
    if not config.tags:
        return stream
    return _Tagged(stream, frozenset(config.tags))


class _Tagged(BatchedStream[EvaluationSample]):
    """The samples of a stream that carry one of ``tags``; each iteration reads afresh (the
    first sample is read once before the run, to check the target's signature)."""

    def __init__(self, samples: AsyncIterable[EvaluationSample], tags: frozenset[str]) -> None:
        self.samples = samples
        self.tags = tags

    async def sample_batches(self) -> AsyncGenerator[list[EvaluationSample], None]:
        batches = batches_of(self.samples)
        tags = self.tags
        try:
            async for batch in batches:
                kept = [sample for sample in batch if not tags.isdisjoint(sample.tags)]
                if kept:
                    yield kept
        finally:
            await batches.aclose()


def _check_templates(
    config: RunConfig, spec: HttpSpec, samples: Iterable[EvaluationSample]
) -> None:
    try:
        check_templates(spec, samples)
    except TemplateError as exc:
        raise config.error(("target", "http", *exc.path), exc.message) from None


def _templates_checked(
    config: RunConfig, spec: HttpSpec, samples: AsyncIterable[EvaluationSample]
) -> AsyncIterable[EvaluationSample]:
    def check(sample: EvaluationSample) -> None:
        _check_templates(config, spec, (sample,))

    if isinstance(samples, CountedStream):
        return CountedStream(samples.sources, samples.count, check)

    async def checked() -> AsyncIterator[EvaluationSample]:
        async for sample in samples:
            check(sample)
            yield sample

    return checked()


async def _check_signature(
    config: RunConfig,
    function: Callable[..., Any],
    samples: Samples | AsyncIterable[EvaluationSample],
) -> None:
    """Refuse, before anything runs, a target that cannot take the samples' parameters.

    Loaded samples are checked whole; a streamed source by its first sample (a later one
    that does not fit stops the run with the same message).
    """
    bound = bind_function(function)
    kind = takes_conversation(function)
    if bound.signature is None and kind is None:
        return
    if isinstance(samples, Samples):
        checked: Sequence[EvaluationSample] = samples
    else:
        checked = []
        iterator = aiter(samples)
        try:
            checked.append(await anext(iterator))
        except StopAsyncIteration:
            pass
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
    for sample in checked:
        try:
            check_conversation_kind(kind, bound.name, sample)
            if kind is False and bound.signature is not None:
                bound.check(sample)
        except TypeError as exc:
            raise config.error(("target",), str(exc)) from None


async def execute(
    config: RunConfig,
    built: Built,
    function: Callable[..., Any] | None,
    progress: RunProgress | None,
    *,
    keep: KeepRows | None = None,
    store: StoreSink | None = None,
    shard: Shard | None = None,
    executor: Executor | None = None,
    gate: GateDecision | None = None,
    tools: Tools = "live",
) -> RunResult:
    """Evaluate ``config`` and write ``rows.jsonl`` and the reports into its output directory.

    JSONL sources are streamed (the report then holds only the rows that did not pass, unless
    ``keep`` says otherwise; every row is in ``rows.jsonl``); other sources are loaded whole.

    Args:
        config: The resolved configuration.
        built: The strategies and the model clients to close at the end.
        function: The imported target, or ``None`` for an HTTP target.
        progress: The display; ``None`` shows nothing (``--quiet``).
        keep: Which rows the report holds (default: all, or failures for streamed sources).
        store: Records the run in the run store, rows as they finish.
        shard: Evaluate only this shard of the samples (``--shard I/N``); the rows keep
            their index in the whole dataset, and the run's header names the shard.
        executor: Where the samples run (``--executor ray``); ``None`` for this process.
        gate: Decides the gate the reports record, from the report, its error rows per
            type and whether the run finished.
        tools: Where ``@aeval.tool`` functions get their results (``--tools``).

    Raises:
        ConfigError: The samples cannot be loaded or do not fit the HTTP templates.
        StoreError: The run store cannot be opened (checked before anything runs).
    """
    streamed = streams(config.samples)
    samples: Samples | AsyncIterable[EvaluationSample] | ShardedSamples
    samples = await _stream(config) if streamed else await _load(config)
    strategies: tuple[object, ...] = built.strategies
    secrets: list[str] = [s for r in built.resources for s in getattr(r, "secrets", ())]
    async with AsyncExitStack() as stack:
        if store is not None:
            stack.push_async_callback(store.store.aclose)
            await store.store.check()
        for resource in built.resources:
            close = getattr(resource, "aclose", None)
            if close is not None:
                stack.push_async_callback(close)
        if isinstance(config.target, HttpSpec):
            spec = config.target
            if isinstance(samples, Samples):
                _check_templates(config, spec, samples)
            else:
                samples = _templates_checked(config, spec, samples)
            try:
                headers = resolve_headers(spec)
            except TemplateError as exc:
                raise config.error(("target", "http", *exc.path), exc.message) from None
            secrets += header_secrets(spec)
            import httpx

            limits = httpx.Limits(max_connections=config.concurrency)
            client = await stack.enter_async_context(httpx.AsyncClient(limits=limits))
            function = HttpTarget(spec, client, headers, secrets=secrets)
            strategies = tuple(StatusRecorder(strategy) for strategy in strategies)
        elif function is not None:
            await _check_signature(config, function, samples)
        if function is None:  # pragma: no cover - guarded by the caller
            raise TypeError("a callable target is required")
        facts: dict[str, Any] = {}
        if shard is not None:
            samples, facts = await split(config, samples, shard)
        await anyio.Path(config.output_dir).mkdir(parents=True, exist_ok=True)
        rows_path = config.output_dir / ROWS_FILE
        sink = _FlushingSink(JsonlSink(rows_path), facts)
        sinks = [sink] if store is None else [sink, _FlushingSink(store, facts)]
        kept: KeepRows = keep or ("failures" if streamed else "all")
        # the report holds every row that did not pass unless keep is "none": without a
        # display, the error types are then counted from it at the end
        tally = _RowTally(progress) if progress is not None or kept == "none" else None
        scorer = Scorer(
            config.concurrency,
            timeout=config.timeout,
            repeats=config.repeats,
            sinks=sinks if tally is None else [*sinks, tally],
            keep=kept,
            redact=secrets,
            executor=executor,
            tools=tools,
            user_model=built.user_model,
            conversation_timeout=config.conversation_timeout,
        )
        planned = len(samples) * config.repeats if isinstance(samples, Sized) else 0
        stop = _Stop()
        run: Run | None = None
        error: Exception | None = None
        if progress is not None:
            progress.start(planned)
        try:
            with unwrap_single_group():
                async with anyio.create_task_group() as group:
                    await group.start(stop.watch, group.cancel_scope)
                    for flushing in sinks:
                        group.start_soon(flushing.run)
                    # what Scorer.stream does, less the rows handed to a reader: the tally
                    # (the last sink) sees each row
                    run = scorer._new_run(samples, function, strategies)
                    with unwrap_single_group():
                        async with anyio.create_task_group() as evaluation:
                            evaluation.start_soon(_evaluate, run)
                    group.cancel_scope.cancel()
            if run is not None and run.interrupted is not None:
                raise run.interrupted
        except KeyboardInterrupt:
            stop.reason = stop.reason or "KeyboardInterrupt"
        except (ConfigError, ExecutorError, MissingExtraError):
            raise
        except Exception as exc:
            error = exc
        finally:
            if progress is not None:
                progress.stop(interrupted=stop.reason is not None or error is not None)
        report = run.aggregator.report() if run is not None else EvaluationReport()
        types = tally.types if tally is not None else error_types(report.evaluations)
        if facts:
            report = report.with_run(report.run.replace(**facts))
        if (
            not report.sample_count
            and stop.reason is None
            and error is None
            and config.tags
            and shard is None
        ):
            raise config.error(
                ("samples", "tags"),
                f"no sample carries any of the tags {', '.join(config.tags)}",
            )
        if gate is not None:
            finished = stop.reason is None and error is None
            report = report.with_run(report.run.replace(gate=gate(report, types, finished)))
        with anyio.CancelScope(shield=True):
            files = await report.save(config.output_dir, formats=config.formats)
    run_id = store.run_id if store is not None else None
    if not any(repr(sink) in warning for warning in report.warnings):
        files = [*files, rows_path]  # listed as written only when the sink never failed
    return RunResult(report, stop.reason, error, tuple(files), run_id, dict(types))
