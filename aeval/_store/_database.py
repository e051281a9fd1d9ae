"""The run store's blocking operations on its SQLite file (``RunStore`` runs them in a thread).

A run's summary is computed from its rows when it ends (see ``_rows``) and kept with it; a run
that has not ended (still going, or killed) is summarised from its rows at each read.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson

from .._exceptions import RunNotFoundError, StoreError
from .._reporting._codec import row_from_dict
from .._reporting._report import EvaluationReport
from .._reporting._results import Outcome
from .._reporting._run_info import RunInfo
from ._columns import (
    COUNT_COLUMNS,
    GROUP_COLUMNS,
    RUN_HEAD,
    run_info,
    run_summary,
    stored_group,
    texts,
)
from ._labels import Label, RowLabel, check_label, check_row, insert_label, row_labels
from ._missing import SHOWN, require_group, require_name, why_no_id, why_not_latest
from ._refs import Ref, parse_ref
from ._rows import EncodedRow, Group, RowEncoder, Summary, row_range, summarise, summary_of
from ._schema import (
    LOCK_TIMEOUT,
    MIGRATIONS,
    Migration,
    busy_timeout,
    connect,
    is_locked,
    is_read_only,
    read_only_error,
    retrying,
    transaction,
)
from ._values import HistoryPoint, RunSummary

__all__ = ["RunDatabase", "RunStart", "new_run_id"]

_T = TypeVar("_T")
_COUNTED = (Outcome.PASSED, Outcome.FAILED, Outcome.UNSCORED, Outcome.ERROR, Outcome.SKIPPED)
"""The outcomes the ``runs`` table has a column for, in its order; the not-applicable rows
are the rest of ``rows`` (:attr:`RunSummary.not_applicable`)."""

_INSERT_ROW = (
    "INSERT INTO rows (id, sample, idx, repeat, strategy, outcome, score, tags, data) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_RUN_COLUMNS = ", ".join((*RUN_HEAD, *COUNT_COLUMNS))


def _unsharded(shards: bool) -> str:
    """The SQL condition that keeps shard runs out unless ``shards``."""
    return "1" if shards else "shard IS NULL"


def new_run_id(now: float | None = None) -> str:
    """A short, sortable id: the UTC start to the second and 4 random hex digits."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


@dataclass(frozen=True, slots=True)
class RunStart:
    """What is known of a run when it starts (or is saved).

    Attributes:
        name: The run's name.
        header: The run's header.
        labels: The user's labels.
        config_hash: A digest of the configuration, if any.
        git_dirty: Whether the working tree had uncommitted changes, if known.
    """

    name: str
    header: RunInfo
    labels: tuple[str, ...] = ()
    config_hash: str | None = None
    git_dirty: bool | None = None


class RunDatabase:
    """The store's file and one connection to it, used by one thread at a time.

    Every method blocks; each takes the lock, opens the file on first use, and runs as whole
    transactions that are retried while another process holds the write lock.

    Args:
        path: The SQLite file.
        migrations: The schema's steps (tests add their own).
        timeout: Seconds to wait, in all, for another process's write lock.
    """

    def __init__(
        self,
        path: Path,
        *,
        migrations: Sequence[Migration] = MIGRATIONS,
        timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self.path = path
        self._migrations = tuple(migrations)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._writer = False

    def _open(self, create: bool) -> sqlite3.Connection | None:
        if create and not self._writer and self._connection is not None:
            self._connection.close()  # opened to read, perhaps read-only: open it to write
            self._connection = None
        if self._connection is None:
            self._connection = connect(
                self.path, create=create, migrations=self._migrations, timeout=self._timeout
            )
            self._writer = create
        return self._connection

    def _write(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            connection = self._open(True)
            assert connection is not None

            def attempt() -> _T:
                with transaction(connection):
                    return operation(connection)

            try:
                return retrying(self.path, attempt, timeout=self._timeout)
            except sqlite3.OperationalError as exc:
                if is_read_only(exc):
                    raise read_only_error(self.path) from exc
                raise self._damaged(exc) from exc
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from exc

    def _try_write(self, operation: Callable[[sqlite3.Connection], None]) -> bool:
        """Run ``operation`` as one transaction if the write lock is free now; ``False``
        (nothing written) when another process holds it."""
        with self._lock:
            connection = self._open(True)
            assert connection is not None
            connection.execute("PRAGMA busy_timeout = 0")
            try:
                with transaction(connection):
                    operation(connection)
            except sqlite3.OperationalError as exc:
                if is_locked(exc):
                    return False
                if is_read_only(exc):
                    raise read_only_error(self.path) from exc
                raise
            finally:
                connection.execute(f"PRAGMA busy_timeout = {busy_timeout(self._timeout)}")
            return True

    def _read(self, operation: Callable[[sqlite3.Connection], _T]) -> _T | None:
        """Run ``operation`` in a read transaction; ``None`` when the file does not exist."""
        with self._lock:
            connection = self._open(False)
            if connection is None:
                return None

            def attempt() -> _T:
                connection.execute("BEGIN")
                try:
                    return operation(connection)
                finally:
                    connection.execute("COMMIT")

            try:
                return retrying(self.path, attempt, timeout=self._timeout)
            except (sqlite3.DatabaseError, orjson.JSONDecodeError) as exc:
                raise self._damaged(exc) from exc

    def _damaged(self, exc: Exception) -> StoreError:
        return StoreError(
            f"{self.path}: the run store is damaged or was edited by hand ({exc}): restore it "
            "from a copy, or recover what is readable with `sqlite3 FILE .recover`, or give "
            "another path (--store PATH, AEVAL_STORE, or the store: key)",
            path=self.path,
        )

    def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def check(self) -> None:
        """Open (and create, or upgrade) the file now, to report a problem before a run."""
        with self._lock:
            self._open(True)

    # -- writing ------------------------------------------------------------------------------

    def begin(self, start: RunStart) -> tuple[int, str]:
        """Record a run's start; return its seq and its id."""
        header = start.header
        started = header.started_at if header.started_at is not None else time.time()

        def insert(connection: sqlite3.Connection) -> tuple[int, str]:
            for _ in range(8):
                run_id = new_run_id(started)
                try:
                    cursor = connection.execute(
                        "INSERT INTO runs (id, name, started_at, complete, header, git_commit, "
                        "git_dirty, config_hash, aeval_version, labels, shard) "
                        "VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            run_id,
                            start.name,
                            started,
                            orjson.dumps(header.to_dict()).decode(),
                            header.git_commit,
                            start.git_dirty,
                            start.config_hash,
                            header.aeval_version,
                            orjson.dumps(start.labels).decode(),
                            header.shard,
                        ),
                    )
                except sqlite3.IntegrityError:
                    continue
                assert cursor.lastrowid is not None
                return cursor.lastrowid, run_id
            raise sqlite3.IntegrityError("no free run id")  # pragma: no cover - 8 collisions

        return self._write(insert)

    def add_rows(
        self, seq: int, first: int, rows: Sequence[EncodedRow], *, wait: bool = True
    ) -> bool:
        """Insert rows numbered from ``first`` (the rows the run stored before this batch).

        With ``wait=False`` a write lock held by another process is not waited for: nothing
        is written and the result is ``False``.
        """
        base = row_range(seq)[0] + first

        def insert(connection: sqlite3.Connection) -> None:
            connection.executemany(_INSERT_ROW, [(base + n, *row) for n, row in enumerate(rows)])

        if not rows:
            return True
        if not wait:
            return self._try_write(insert)
        self._write(insert)
        return True

    def finish(
        self, seq: int, header: RunInfo, models: Iterable[str], summary: Summary | None = None
    ) -> None:
        """Record a run's end: its header, whether it was complete, and its summary.

        Args:
            seq: The run.
            header: Its header at the end.
            models: The model names its rows gave.
            summary: The summary of its rows (by default computed from the stored rows).
        """
        finished = header.finished_at if header.finished_at is not None else time.time()

        def update(connection: sqlite3.Connection) -> None:
            found = summary if summary is not None else summarise(connection, seq)
            overall, counts = found.overall, found.counts
            connection.execute(
                "UPDATE runs SET finished_at = ?, complete = ?, header = ?, models = ?, "
                "rows = ?, passed = ?, failed = ?, unscored = ?, errors = ?, skipped = ?, "
                "samples = ?, score = ?, ci_low = ?, ci_high = ? WHERE seq = ?",
                (
                    finished,
                    header.complete,
                    orjson.dumps(header.to_dict()).decode(),
                    orjson.dumps(list(models)).decode(),
                    overall.rows,
                    *(counts.get(outcome.value, 0) for outcome in _COUNTED),
                    overall.samples,
                    overall.score,
                    *overall.interval,
                    seq,
                ),
            )
            connection.execute("DELETE FROM run_groups WHERE run = ?", (seq,))
            connection.executemany(
                f"INSERT INTO run_groups (run, kind, key, {GROUP_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (seq, kind, key, g.rows, g.passed, g.samples, g.score, *g.interval)
                    for (kind, key), g in found.groups.items()
                ],
            )

        self._write(update)

    def save(self, report: EvaluationReport, start: RunStart, *, batch: int = 5000) -> str:
        """Store a whole report: its start, its rows in batches, then its end; return its id."""
        seq, run_id = self.begin(start)
        encoder = RowEncoder()
        rows = report.evaluations
        for first in range(0, len(rows), batch):
            self.add_rows(seq, first, [encoder(row) for row in rows[first : first + batch]])
        self.finish(seq, start.header, encoder.models, summary_of(report))
        return run_id

    # -- reading ------------------------------------------------------------------------------

    def runs(
        self, name: str | None = None, *, last: int | None = None, shards: bool = False
    ) -> list[RunSummary]:
        """The runs (of ``name``), oldest first; only the ``last`` ones when given; the runs
        of single shards only when ``shards``."""

        def select(connection: sqlite3.Connection) -> list[RunSummary]:
            where, values = f"WHERE {_unsharded(shards)}", []
            if name is not None:
                where, values = f"{where} AND name = ?", [name]
            limit = ""
            if last is not None:
                limit = f" LIMIT {int(last)}"
            found = connection.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs {where} "
                f"ORDER BY started_at DESC, seq DESC{limit}",
                values,
            ).fetchall()
            return [self._summary_of(connection, record) for record in reversed(found)]

        return self._read(select) or []

    def _summary_of(self, connection: sqlite3.Connection, record: Sequence[Any]) -> RunSummary:
        counts = record[len(RUN_HEAD) :]
        if counts[0] is None:
            summary = summarise(connection, record[0])
            found, overall = summary.counts, summary.overall
            counts = (
                overall.rows,
                *(found.get(outcome.value, 0) for outcome in _COUNTED),
                overall.samples,
                overall.score,
                *overall.interval,
            )
        try:
            return run_summary(record[: len(RUN_HEAD)], counts)
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise self._damaged(ValueError(f"run {record[1]}: {exc}")) from exc

    def resolve(self, ref: str, *, shards: bool = False) -> str:
        """The id of the run ``ref`` names (see :func:`parse_ref`); ``latest`` and
        ``latest~N`` count the runs of single shards only when ``shards``.

        Raises:
            RunNotFoundError: No run matches; the message says what the store holds.
            ValueError: ``ref`` is not a reference.
        """
        parsed = parse_ref(ref)
        found = self._read(lambda connection: self._resolve(connection, parsed, shards)[1])
        if found is None:
            raise self._missing(parsed)
        return found

    def _missing(self, ref: Ref) -> RunNotFoundError:
        return self._not_found(ref, f"{self.path} does not exist yet: no run was stored there")

    def _not_found(self, ref: Ref, why: str) -> RunNotFoundError:
        return RunNotFoundError(
            f"no stored run matches {ref.text!r}: {why}", path=self.path, ref=ref.text
        )

    def _resolve(
        self, connection: sqlite3.Connection, ref: Ref, shards: bool = False
    ) -> tuple[int, str]:
        if ref.back is not None:
            where, values = f"WHERE {_unsharded(shards)}", []
            if ref.name is not None:
                where, values = f"{where} AND name = ?", [ref.name]
            found = connection.execute(
                f"SELECT seq, id FROM runs {where} ORDER BY started_at DESC, seq DESC "
                "LIMIT 1 OFFSET ?",
                [*values, ref.back],
            ).fetchone()
            if found is not None:
                return found[0], found[1]
            raise self._not_found(ref, why_not_latest(connection, self.path, ref, shards))
        text = ref.text.strip()
        found = connection.execute("SELECT seq, id FROM runs WHERE id = ?", (text,)).fetchone()
        if found is not None:
            return found[0], found[1]
        matches = connection.execute(
            "SELECT seq, id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY started_at DESC "
            f"LIMIT {SHOWN + 1}",
            (len(text), text),
        ).fetchall()
        if len(matches) == 1:
            return matches[0][0], matches[0][1]
        if matches:
            shown = ", ".join(run_id for _, run_id in matches[:SHOWN])
            raise self._not_found(
                ref, f"it starts {len(matches)} or more run ids ({shown}): give more of the id"
            )
        raise self._not_found(ref, why_no_id(connection, self.path, ref))

    def load(self, ref: str, *, shards: bool = False) -> EvaluationReport:
        """Rebuild the report of the run ``ref`` names from its stored rows and header."""
        parsed = parse_ref(ref)

        def read(connection: sqlite3.Connection) -> tuple[list[str], str]:
            seq, _ = self._resolve(connection, parsed, shards)
            first, last = row_range(seq)
            header = connection.execute("SELECT header FROM runs WHERE seq = ?", (seq,)).fetchone()[
                0
            ]
            rows = connection.execute(
                "SELECT data FROM rows WHERE id BETWEEN ? AND ? ORDER BY id", (first, last)
            ).fetchall()
            return [data for (data,) in rows], header

        found = self._read(read)
        if found is None:
            raise self._missing(parsed)
        data, header = found
        rows = []
        for number, line in enumerate(data):
            try:
                rows.append(row_from_dict(orjson.loads(line)))
            except (ValueError, TypeError, orjson.JSONDecodeError) as exc:
                raise self._damaged(ValueError(f"{ref}: row {number + 1}: {exc}")) from exc
        try:
            info = run_info(header)
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise self._damaged(ValueError(f"{ref}: its header: {exc}")) from exc
        return EvaluationReport(rows, run=info)

    def read_run(self, ref: str, operation: Callable[[sqlite3.Connection, int, str], _T]) -> _T:
        """``operation(connection, seq, id)`` on the run ``ref`` names (shard runs counted),
        in one read transaction.

        Raises:
            RunNotFoundError: No run matches.
            StoreError: ``operation`` found a row or header it cannot read (``ValueError``).
        """
        parsed = parse_ref(ref)
        try:
            found = self._read(lambda c: (operation(c, *self._resolve(c, parsed, True)),))
        except ValueError as exc:
            raise self._damaged(ValueError(f"{ref}: {exc}")) from exc
        if found is None:
            raise self._missing(parsed)
        return found[0]

    def _run_of(self, connection: sqlite3.Connection, ref: Ref) -> tuple[int, str, str]:
        seq, run_id = self._resolve(connection, ref)
        name = connection.execute("SELECT name FROM runs WHERE seq = ?", (seq,)).fetchone()[0]
        return seq, run_id, name

    def add_label(
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
        """Label the row ``(sample, repeat, strategy)`` of the run ``ref`` (see RunStore)."""
        parsed = parse_ref(ref)
        row = check_row(sample, repeat, strategy)
        checked = check_label(reviewer, verdict, note)
        if not self.path.exists():
            raise self._missing(parsed)
        return self._write(
            lambda connection: insert_label(
                connection, self._run_of(connection, parsed), row, *checked
            )
        )

    def labels(self, ref: str, *, reviewer: str | None = None) -> tuple[RowLabel, ...]:
        """The labels that stand for the rows of the run ``ref`` (see RunStore)."""
        parsed = parse_ref(ref)
        found = self._read(lambda c: row_labels(c, self._run_of(c, parsed), reviewer))
        if found is None:
            raise self._missing(parsed)
        return found

    def history(
        self,
        name: str,
        *,
        tag: str | None = None,
        strategy: str | None = None,
        since: float | None = None,
        shards: bool = False,
    ) -> list[HistoryPoint]:
        """The pass rate of each run of ``name`` since ``since``, oldest first (see RunStore)."""
        if tag is not None and strategy is not None:
            raise ValueError("history: give a tag or a strategy, not both")
        group: tuple[str, str] | None = None
        if tag is not None:
            group = ("tag", tag)
        elif strategy is not None:
            group = ("strategy", strategy)

        def select(connection: sqlite3.Connection) -> list[HistoryPoint]:
            require_name(connection, self.path, name, shards)
            runs = connection.execute(
                "SELECT seq, id, started_at, complete, git_commit, git_dirty, labels, shard, "
                f"{GROUP_COLUMNS} FROM runs WHERE name = ? "
                f"AND started_at >= ? AND {_unsharded(shards)} ORDER BY started_at, seq",
                (name, since if since is not None else float("-inf")),
            ).fetchall()
            points: list[HistoryPoint] = []
            for seq, run_id, started, complete, commit, dirty, labels, shard, *counts in runs:
                try:
                    found = self._group(connection, seq, counts, group)
                    tags = texts(labels, "labels")
                except (ValueError, orjson.JSONDecodeError) as exc:
                    raise self._damaged(ValueError(f"run {run_id}: {exc}")) from exc
                if found is None:
                    continue
                points.append(
                    HistoryPoint(
                        run_id=run_id,
                        started_at=started,
                        score=found.score,
                        interval=found.interval,
                        rows=found.rows,
                        passed=found.passed,
                        samples=found.samples,
                        complete=bool(complete),
                        git_commit=commit,
                        git_dirty=None if dirty is None else bool(dirty),
                        labels=tags,
                        shard=shard,
                    )
                )
            if group is not None and not points:
                require_group(connection, name, group)
            return points

        points = self._read(select)
        if points is None:
            raise RunNotFoundError(
                f"no run named {name!r}: {self.path} does not exist yet", path=self.path, ref=name
            )
        return points

    def _group(
        self,
        connection: sqlite3.Connection,
        seq: int,
        counts: Sequence[Any],
        group: tuple[str, str] | None,
    ) -> Group | None:
        if counts[0] is None:
            summary = summarise(connection, seq)
            if group is None:
                return summary.overall
            return summary.groups.get(group)
        if group is None:
            return stored_group(*counts)
        found = connection.execute(
            f"SELECT {GROUP_COLUMNS} FROM run_groups WHERE run = ? AND kind = ? AND key = ?",
            (seq, *group),
        ).fetchone()
        if found is None:
            return None
        return stored_group(*found)

    def average_score(self, name: str, *, since: float | None = None) -> float | None:
        """100 × passed / rows over every stored row of the runs of ``name`` since ``since``
        (the runs of single shards left out: their merged run counts their rows)."""
        points = self.history(name, since=since)
        rows = sum(point.rows for point in points)
        return 100.0 * sum(point.passed for point in points) / rows if rows else None
