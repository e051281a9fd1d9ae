"""``RunStore``: every run kept in one SQLite file, for history and comparison; and
``StoreSink``, which writes a run's rows into it as they finish."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson

from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow
from .._reporting._run_info import RunInfo, current_git_commit
from ..abc import BaseSink
from ._database import RunDatabase, RunStart
from ._git import git_dirty_async
from ._labels import Label, RowLabel
from ._review import LabelCalibration, calibrate_labels
from ._rows import RowEncoder
from ._schema import LOCK_TIMEOUT
from ._values import HistoryPoint, RunSummary, Since, parse_since

if TYPE_CHECKING:
    import sqlite3

__all__ = ["DEFAULT_STORE_PATH", "RunStore", "StoreSink", "config_digest"]

_T = TypeVar("_T")

_RETRY_AFTER = 0.1
"""Least seconds between two tries of a store whose write lock another process holds."""

DEFAULT_STORE_PATH = Path(".aeval", "runs.sqlite")
"""Where ``aeval run`` records runs by default (relative to the working directory)."""

Config = Mapping[str, Any] | str | bytes


def config_digest(config: Config) -> str:
    """A short digest of a configuration: its text or bytes, or a mapping as sorted JSON."""
    if isinstance(config, Mapping):
        data = orjson.dumps(
            config, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
        )
    elif isinstance(config, str):
        data = config.encode("utf-8", "surrogatepass")
    elif isinstance(config, bytes):
        data = config
    else:
        raise TypeError(f"config: expected a mapping, text or bytes, got {type(config).__name__}")
    return hashlib.sha256(data).hexdigest()[:16]


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"a run needs a name (a non-empty string, e.g. the configuration's), got {name!r}"
        )
    return name.strip()


def _labels(labels: Iterable[str]) -> tuple[str, ...]:
    found = (labels,) if isinstance(labels, str) else tuple(labels)
    for label in found:
        if not isinstance(label, str) or not label:
            raise ValueError(f"labels are non-empty strings, got {label!r}")
    return tuple(dict.fromkeys(found))


class RunStore:
    """Keeps every run in one SQLite file: its header, its summary and every row.

    ``aeval run`` records each run here (``.aeval/runs.sqlite`` by default) and the pytest
    plugin records each test's evaluation with ``--aeval-store``; in Python, save a report
    explicitly. Every method runs its SQLite work in a worker thread, one at a time per store,
    never on the event loop. Several processes may write to one file at once.

    Nothing bound to an event loop is made in ``__init__``; ``async with`` closes the
    connection (the store opens it again if used later). Reading a store whose file does not
    exist finds no run and creates nothing.

    Args:
        path: The SQLite file (created with its directory on the first write).
        timeout: Seconds to wait, in all, while another process holds the write lock.

    Example:
        >>> async with RunStore(".aeval/runs.sqlite") as store:  # doctest: +SKIP
        ...     run_id = await store.save(report, "support-bot", labels=["prompt-v2"])
        ...     previous = await store.load("support-bot@latest~1")
    """

    def __init__(
        self,
        path: str | PathLike[str] = DEFAULT_STORE_PATH,
        *,
        timeout: float = LOCK_TIMEOUT,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._path = Path(os.path.abspath(os.fspath(path)))
        self._database = RunDatabase(self._path, timeout=timeout)
        self._limiter: tuple[object, anyio.CapacityLimiter] | None = None

    @property
    def path(self) -> Path:
        """The SQLite file (absolute)."""
        return self._path

    def __repr__(self) -> str:
        return f"RunStore({str(self._path)!r})"

    async def __aenter__(self) -> RunStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (a later call opens it again)."""
        await self._run(self._database.close)

    async def _run(self, function: Callable[..., _T], *args: Any) -> _T:
        token = anyio.lowlevel.current_token()
        if self._limiter is None or self._limiter[0] is not token:
            self._limiter = (token, anyio.CapacityLimiter(1))
        return await anyio.to_thread.run_sync(partial(function, *args), limiter=self._limiter[1])

    async def check(self) -> None:
        """Open the file now (creating it, or upgrading its schema) to find problems early.

        Raises:
            StoreError: The file is not an aeval run store, is newer than this aeval, or
                cannot be created.
        """
        await self._run(self._database.check)

    async def save(
        self,
        report: EvaluationReport,
        name: str,
        *,
        labels: Iterable[str] = (),
        config: Config | None = None,
        git_dirty: bool | None = None,
    ) -> str:
        """Store ``report`` and every row it holds; return the new run's id.

        Args:
            report: A report holding every row (``keep="all"``, the default).
            name: The run's name; its history is the runs of that name.
            labels: Words to find the run by later (``"prompt-v2"``, ``"nightly"``).
            config: The configuration the run used, kept as a digest (a mapping, or the
                text or bytes of a file).
            git_dirty: Whether the working tree had uncommitted changes; by default asked of
                ``git status`` when the report's commit is the one checked out.

        Raises:
            ValueError: The report holds only some of its rows, or the name is empty.
            StoreError: The store cannot be written.
        """
        if not isinstance(report, EvaluationReport):
            raise TypeError(f"save() takes an EvaluationReport, got {type(report).__name__}")
        if not report.holds_all_rows:
            raise ValueError(
                f"this report holds {len(report.evaluations)} of its {report.evaluation_count} "
                "rows (it was made with keep='failures' or keep='none'), and the store keeps "
                "every row: evaluate with keep='all', or give the Scorer "
                "sinks=[store.sink(name)] to store the rows as they finish"
            )
        commit = report.run.git_commit
        if git_dirty is None and commit is not None and commit == await current_git_commit():
            git_dirty = await git_dirty_async()
        start = RunStart(
            _name(name),
            report.run,
            _labels(labels),
            None if config is None else config_digest(config),
            git_dirty,
        )
        return await self._run(self._database.save, report, start)

    def sink(
        self,
        name: str,
        *,
        labels: Iterable[str] = (),
        config: Config | None = None,
        batch: int = 2000,
        interval: float = 0.5,
        buffer: int = 100_000,
    ) -> StoreSink:
        """A sink that stores each run it is given (``Scorer(sinks=[store.sink("bot")])``).

        Args:
            name: The runs' name.
            labels: Words to find the runs by.
            config: The configuration, kept as a digest.
            batch: Rows per insert.
            interval: Most seconds a finished row waits before it is written (while rows come
                and the store is not locked by another process).
            buffer: Most rows held while another process holds the write lock.

        Raises:
            ValueError: ``batch`` or ``buffer`` is not an integer >= 1, or ``interval`` is
                negative.
        """
        return StoreSink(
            self, name, labels=labels, config=config, batch=batch, interval=interval, buffer=buffer
        )

    async def resolve(self, ref: str, *, shards: bool = False) -> str:
        """The id of the run ``ref`` names.

        ``ref`` is a run id (or a start of one that only one id has), ``latest`` (the run
        that started last), ``latest~N`` (N runs before it), ``NAME@latest`` or
        ``NAME@latest~N`` (the same among the runs named NAME). ``latest`` counts the runs
        of single shards (``aeval run --shard``) only when ``shards``; a shard run's id
        always names it.

        Raises:
            RunNotFoundError: No run matches; the message says what the store holds.
            ValueError: ``ref`` is not a reference (``NAME@something-else``).
        """
        return await self._run(partial(self._database.resolve, ref, shards=shards))

    async def load(self, ref: str, *, shards: bool = False) -> EvaluationReport:
        """The report of the run ``ref`` names (see :meth:`resolve`), rebuilt from its rows.

        Its counts, scores and intervals are those of the report that was stored, and its
        header (``report.run``) is the run's, ``complete`` included.

        Raises:
            RunNotFoundError: No run matches.
        """
        return await self._run(partial(self._database.load, ref, shards=shards))

    async def _read_run(
        self, ref: str, operation: Callable[[sqlite3.Connection, int, str], _T]
    ) -> _T:
        """``operation(connection, seq, id)`` on the run ``ref`` names, in the store's thread
        (for ``_pages``)."""
        return await self._run(self._database.read_run, ref, operation)

    async def _read_store(self, operation: Callable[[sqlite3.Connection], _T]) -> _T | None:
        """``operation(connection)`` in one read transaction, in the store's thread (for
        ``_pages``); ``None`` when the store's file does not exist yet."""
        return await self._run(self._database._read, operation)

    async def add_label(
        self,
        ref: str,
        *,
        sample: str,
        strategy: str | None,
        repeat: int = 0,
        reviewer: str,
        verdict: str,
        note: str | None = None,
    ) -> Label:
        """Record a reviewer's verdict on one row of a stored run; return the label.

        The label is kept under the run's name for the output the row holds (its SHA-256,
        computed from the stored row, so a label always judges an output that was shown).
        Labelling the same output again, by the same reviewer, replaces the earlier label.
        Every run of the name whose row has that output shows the label as current; a run
        whose output differs shows it as stale (see :meth:`labels`).

        Args:
            ref: The run (see :meth:`resolve`).
            sample: The row's sample name.
            strategy: The row's strategy (``None`` for the row of a run without one).
            repeat: The row's repeat (0-based).
            reviewer: Who labels (a non-empty name).
            verdict: ``"pass"`` or ``"fail"`` (any case).
            note: Why, optionally.

        Raises:
            RunNotFoundError: No run matches ``ref``.
            ValueError: The run has no such row (the message lists what it has), the
                verdict is not pass/fail, or the reviewer is empty.
            StoreError: The store cannot be written.
        """
        return await self._run(
            partial(
                self._database.add_label,
                ref,
                sample=sample,
                strategy=strategy,
                repeat=repeat,
                reviewer=reviewer,
                verdict=verdict,
                note=note,
            )
        )

    async def labels(self, ref: str, *, reviewer: str | None = None) -> tuple[RowLabel, ...]:
        """The labels of the rows of a stored run, in row order, each current or stale.

        For each row and each reviewer who labelled its sample and strategy: the reviewer's
        label of the row's output (``stale=False``), or, when the reviewer labelled another
        output only, the latest such label (``stale=True``: shown, never used to calibrate).

        Args:
            ref: The run (see :meth:`resolve`).
            reviewer: Only this reviewer's labels.

        Raises:
            RunNotFoundError: No run matches ``ref``.
        """
        return await self._run(partial(self._database.labels, ref, reviewer=reviewer))

    async def calibrate(
        self, ref: str, *, strategy: str | None = None, reviewer: str | None = None
    ) -> LabelCalibration:
        """A strategy's stored verdicts in the run ``ref`` against its stored labels.

        See :func:`aeval.calibrate_labels`, which this calls with the run's report and labels
        (no model call).

        Raises:
            RunNotFoundError: No run matches ``ref``.
            ValueError: No current label, or no strategy to calibrate (the message says).
        """
        run_id = await self.resolve(ref)
        report = await self.load(run_id)
        labels = await self.labels(run_id)
        return calibrate_labels(report, labels, strategy=strategy, reviewer=reviewer)

    async def runs(
        self, name: str | None = None, *, last: int | None = None, shards: bool = False
    ) -> list[RunSummary]:
        """The stored runs, oldest first: all of them, or those named ``name``.

        Args:
            name: Only the runs of this name.
            last: Only the most recent ``last`` runs.
            shards: Include the runs of single shards (``aeval run --shard``), which are
                left out by default: the merged run (``aeval merge``) stands for them.
        """
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
            raise ValueError(f"last must be an integer >= 1, got {last!r}")
        return await self._run(partial(self._database.runs, name, last=last, shards=shards))

    async def history(
        self,
        name: str,
        tag: str | None = None,
        strategy: str | None = None,
        since: Since | None = None,
        *,
        shards: bool = False,
    ) -> list[HistoryPoint]:
        """The pass rate of each run of ``name``, oldest first, with its interval.

        Each point is the score of a run's rows (100 × passed / rows, as ``report.score``),
        or of its rows whose sample carries ``tag``, or of the rows of ``strategy``; runs
        without such rows have no point. Partial runs are included (``complete`` says so);
        the runs of single shards (``aeval run --shard``) only with ``shards=True``.

        Args:
            name: The runs' name.
            tag: Only the rows of samples with this tag.
            strategy: Only the rows of this strategy.
            since: Only runs started then or later: a datetime (naive means UTC), a date, a
                Unix time, a ``timedelta`` back from now, or text (``2026-11-01``, ``7d``).
            shards: Include the runs of single shards.

        Raises:
            RunNotFoundError: No run has this name (or only shard runs, without ``shards``).
            ValueError: No run of ``name`` has rows of ``tag`` or ``strategy`` (the message
                lists those there are), or both were given.
        """
        moment = parse_since(since)
        return await self._run(
            partial(
                self._database.history,
                name,
                tag=tag,
                strategy=strategy,
                since=moment,
                shards=shards,
            )
        )

    async def average_score(self, name: str, *, since: Since | None = None) -> float | None:
        """The pass rate over every row of the runs of ``name`` started since ``since``.

        Seed 003's "average score since T". It pools the rows (passed rows / rows, in
        percent), so a run weighs as many rows as it evaluated, not one vote per run:
        a 10-sample smoke run does not count as much as a 500-sample nightly run. Partial
        runs count with the rows they finished; the runs of single shards do not (their merged
        run does). ``None`` when no row was stored since then.

        Raises:
            RunNotFoundError: No run has this name.
        """
        moment = parse_since(since)
        return await self._run(partial(self._database.average_score, name, since=moment))


class StoreSink(BaseSink):
    """Writes each run a Scorer gives it into a :class:`RunStore`, rows as they finish.

    At the start of a run it records the run (partial, with its header, the git commit and
    whether the tree is dirty). Rows are inserted in batches, each in one transaction, when
    ``batch`` rows are waiting or ``interval`` seconds have passed since the last write, and
    at the end of the run, also a cancelled one (the Scorer flushes its sinks shielded). So a
    stopped run keeps every row that finished, and a killed one all but its last moments'.
    At the end the run is marked complete or partial and its summary is computed from the
    stored rows (in SQL, off the event loop).

    While another process holds the store's write lock, rows are not waited for: they stay
    buffered, and the next batch (or ``flush``) tries again, so the evaluation goes on. Only
    when ``buffer`` rows are waiting, and at the end of the run, does the sink wait for the
    lock (up to the store's ``timeout``, then a ``StoreError``).

    Args:
        store: Where runs go.
        name: The runs' name.
        labels: Words to find the runs by.
        config: The configuration, kept as a digest.
        batch: Rows per insert.
        interval: Most seconds a finished row waits before it is written (while rows come
            and the store is not locked by another process).
        buffer: Most rows held while another process holds the write lock.

    Example:
        >>> store = RunStore()  # doctest: +SKIP
        >>> sink = store.sink("support-bot")  # doctest: +SKIP
        >>> report = await Scorer(4, sinks=[sink]).evaluate(samples, bot, check)  # doctest: +SKIP
        >>> sink.run_id  # doctest: +SKIP
        '20261130-195042-3f9a'
    """

    def __init__(
        self,
        store: RunStore,
        name: str,
        *,
        labels: Iterable[str] = (),
        config: Config | None = None,
        batch: int = 2000,
        interval: float = 0.5,
        buffer: int = 100_000,
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise ValueError(f"buffer must be an integer >= 1, got {buffer!r}")
        if not interval >= 0:
            raise ValueError(f"interval must be a number of seconds >= 0, got {interval!r}")
        self.store = store
        self.name = _name(name)
        self.labels = _labels(labels)
        self.config_hash = None if config is None else config_digest(config)
        self._batch = batch
        self._interval = interval
        self._limit = buffer
        self._retry_at = 0.0
        self._writing: anyio.Lock | None = None
        self._seq: int | None = None
        self._run_id: str | None = None
        self._buffer: list[EvaluationRow] = []
        self._written = 0
        self._last_write = 0.0
        self._encoder = RowEncoder()

    @property
    def run_id(self) -> str | None:
        """The id of the run being stored, or of the last one (``None`` before any)."""
        return self._run_id

    @property
    def rows_written(self) -> int:
        """Rows of the current (or last) run written to the store so far."""
        return self._written

    @property
    def rows_waiting(self) -> int:
        """Rows received and not written yet (the store was locked, or the batch not full)."""
        return len(self._buffer)

    def __repr__(self) -> str:
        return f"StoreSink({self.store!r}, {self.name!r})"

    async def run_started(self, run: RunInfo) -> None:
        """Record the run's start."""
        dirty = await git_dirty_async() if run.git_commit is not None else None
        start = RunStart(self.name, run, self.labels, self.config_hash, dirty)
        self._buffer, self._written, self._encoder = [], 0, RowEncoder()
        self._writing = anyio.Lock()
        self._seq, self._run_id = await self.store._run(self.store._database.begin, start)
        self._last_write = time.monotonic()
        self._retry_at = 0.0

    async def send(self, row: EvaluationRow) -> None:
        """Buffer one row; write the batch when it is full or has waited long enough."""
        if self._seq is None:
            raise RuntimeError(
                "StoreSink received a row before its run started: give the sink to a Scorer "
                "(Scorer(sinks=[store.sink(name)])), which starts each run"
            )
        self._buffer.append(row)
        now = time.monotonic()
        full = len(self._buffer) >= self._limit
        due = len(self._buffer) >= self._batch or now - self._last_write >= self._interval
        if full or (due and now >= self._retry_at):
            await self._write(wait=full)

    async def _write(self, *, wait: bool) -> None:
        seq, lock = self._seq, self._writing
        if seq is None or lock is None or not self._buffer:
            return
        if lock.locked() and not wait:
            return  # a write is under way; these rows go with the next one
        async with lock:
            rows = self._buffer[:]
            if not rows:
                return
            self._last_write = time.monotonic()
            with anyio.CancelScope(shield=True):
                written = await self.store._run(self._insert, seq, self._written, rows, wait)
            if written:
                del self._buffer[: len(rows)]
                self._written += len(rows)
            else:
                self._retry_at = time.monotonic() + max(self._interval, _RETRY_AFTER)

    def _insert(self, seq: int, first: int, rows: list[EvaluationRow], wait: bool) -> bool:
        encode = self._encoder
        return self.store._database.add_rows(seq, first, [encode(row) for row in rows], wait=wait)

    async def flush(self) -> None:
        """Write every buffered row, unless another process holds the store's write lock:
        then they wait for a later write (the end of the run waits for the lock)."""
        await self._write(wait=False)

    async def run_finished(self, run: RunInfo) -> None:
        """Write the rest, then mark the run complete or partial and store its summary."""
        await self._write(wait=True)
        seq = self._seq
        if seq is None:
            return
        with anyio.CancelScope(shield=True):
            await self.store._run(self.store._database.finish, seq, run, list(self._encoder.models))
        self._seq = None
