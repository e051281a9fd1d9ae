"""The run store's SQLite file: its schema, its migrations, and safe access from many processes.

The file holds a one-row table ``aeval_schema`` with the schema's version. Opening a store
brings an older file up to :data:`SCHEMA_VERSION` by applying the :data:`MIGRATIONS` it lacks,
in order, in one ``BEGIN IMMEDIATE`` transaction (a failed step leaves the file as it was); a
file written by a newer aeval is refused, as is a file that is not an aeval run store.

Several processes may write at once (two ``aeval run`` in one CI job): the file is in WAL
mode, every write is a ``BEGIN IMMEDIATE`` transaction (so it waits for the write lock up
front instead of failing half way), SQLite's busy timeout waits for the lock, and an
operation that still meets "database is locked" is retried with a random back-off until
:data:`LOCK_TIMEOUT` seconds have passed. Transactions are short (one batch of rows), so a
writer never holds the lock for long.

Schema, version 3 (version 2 without ``labels``; version 1 without ``runs.shard`` either)::

    runs        one row per run: seq (INTEGER PRIMARY KEY), id (the short id users see),
                name, started_at, finished_at (NULL until the run ends), complete, header
                (RunInfo as JSON), git_commit, git_dirty, config_hash, aeval_version, labels
                and models (JSON lists), and the summary written when the run ends: rows,
                passed, failed, unscored, errors, skipped, samples, score, ci_low, ci_high;
                shard ("I/N" for the run of one shard, ``aeval run --shard``, else NULL)
    rows        one row per (sample, repeat, strategy): id = run seq << 32 | row number (so
                a run's rows are one contiguous range of the table, with no second index),
                sample, idx, repeat, strategy, outcome, score, tags (JSON list or NULL) and
                data, the row exactly as a line of rows.jsonl
    run_groups  the summary per tag and per strategy: (run, kind, key) → rows, passed,
                samples, score, ci_low, ci_high
    labels      the reviewers' labels (see ``_labels``): name, sample, strategy ('' for
                none), output_sha256, reviewer, verdict, note, labelled_at, run (the id of
                the run it was made in), repeat; unique per (name, sample, strategy,
                reviewer, output_sha256)
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from .._exceptions import StoreError

__all__ = [
    "LOCK_TIMEOUT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "busy_timeout",
    "connect",
    "is_locked",
    "is_read_only",
    "read_only_error",
    "retrying",
    "schema_version",
    "shard_of_header",
    "transaction",
]

_T = TypeVar("_T")

LOCK_TIMEOUT = 60.0
"""Seconds an operation waits, in all, for another process's write transaction to end."""

_BUSY_TIMEOUT_MS = 5_000
_PAGE_SIZE = 16_384


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: what brings a file from ``version - 1`` to ``version``.

    Attributes:
        version: The version the file has once the step is applied.
        description: What the step changes, for error messages.
        apply: Runs the step's statements on a connection inside the migration's
            transaction (it must not commit).
    """

    version: int
    description: str
    apply: Callable[[sqlite3.Connection], None]


_VERSION_1 = (
    """
    CREATE TABLE runs (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL,
        complete INTEGER NOT NULL DEFAULT 0,
        header TEXT NOT NULL,
        git_commit TEXT,
        git_dirty INTEGER,
        config_hash TEXT,
        aeval_version TEXT,
        labels TEXT NOT NULL DEFAULT '[]',
        models TEXT NOT NULL DEFAULT '[]',
        rows INTEGER,
        passed INTEGER,
        failed INTEGER,
        unscored INTEGER,
        errors INTEGER,
        skipped INTEGER,
        samples INTEGER,
        score REAL,
        ci_low REAL,
        ci_high REAL
    )
    """,
    "CREATE INDEX runs_by_name ON runs (name, started_at)",
    "CREATE INDEX runs_by_time ON runs (started_at)",
    """
    CREATE TABLE rows (
        id INTEGER PRIMARY KEY,
        sample TEXT NOT NULL,
        idx INTEGER NOT NULL,
        repeat INTEGER NOT NULL,
        strategy TEXT,
        outcome TEXT NOT NULL,
        score REAL,
        tags TEXT,
        data TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE run_groups (
        run INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('tag', 'strategy')),
        key TEXT NOT NULL,
        rows INTEGER NOT NULL,
        passed INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        score REAL NOT NULL,
        ci_low REAL NOT NULL,
        ci_high REAL NOT NULL,
        PRIMARY KEY (run, kind, key)
    )
    """,
)


def _create_version_1(connection: sqlite3.Connection) -> None:
    for statement in _VERSION_1:
        connection.execute(statement)


def shard_of_header(header: object) -> str | None:
    """The ``shard`` of a run's header (JSON text), ``None`` when it has none or is unreadable."""
    import orjson

    try:
        data = orjson.loads(header) if isinstance(header, str | bytes) else None
    except orjson.JSONDecodeError:
        return None
    shard = data.get("shard") if isinstance(data, dict) else None
    return shard if isinstance(shard, str) else None


def _add_shards(connection: sqlite3.Connection) -> None:
    connection.execute("ALTER TABLE runs ADD COLUMN shard TEXT")
    found = connection.execute("SELECT seq, header FROM runs").fetchall()
    connection.executemany(
        "UPDATE runs SET shard = ? WHERE seq = ?",
        [(shard, seq) for seq, header in found if (shard := shard_of_header(header)) is not None],
    )


_LABELS_TABLE = """
    CREATE TABLE {prefix}labels (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        sample TEXT NOT NULL,
        strategy TEXT NOT NULL,
        output_sha256 TEXT NOT NULL,
        reviewer TEXT NOT NULL,
        verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),
        note TEXT,
        labelled_at REAL NOT NULL,
        run TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        UNIQUE (name, sample, strategy, reviewer, output_sha256)
    )
"""
"""The ``labels`` table (``strategy`` is ``''`` for a row without one)."""


def _add_labels(connection: sqlite3.Connection, prefix: str = "") -> None:
    connection.execute(_LABELS_TABLE.format(prefix=prefix))
    if not prefix:
        connection.execute("CREATE INDEX labels_by_sample ON labels (name, sample)")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, their rows and their scores per tag and strategy", _create_version_1),
    Migration(2, "the shard of each run, so that shard runs stay out of history", _add_shards),
    Migration(3, "the reviewers' labels of outputs", _add_labels),
)
"""Every step, in order; a new schema adds a step here and never edits an old one."""

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The version this aeval writes."""


def busy_timeout(timeout: float) -> int:
    """SQLite's busy timeout (milliseconds) for a store that waits ``timeout`` s in all."""
    return min(_BUSY_TIMEOUT_MS, max(1, int(timeout * 1000)))


def is_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "attempt to write a readonly database"."""
    return isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc).lower()


def read_only_error(path: Path) -> StoreError:
    """The error of a write to a store that cannot be written."""
    return StoreError(
        f"{path}: the run store is read-only (the file or its directory cannot be written): "
        "it can be read (aeval runs, history, compare) but not record a run; make it "
        "writable, or give another path (--store PATH, AEVAL_STORE, or the store: key)",
        path=path,
    )


def _writable(path: Path) -> bool:
    """Whether SQLite can write ``path`` in WAL mode (the file and, for its ``-wal`` and
    ``-shm`` files, its directory)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (or busy), worth retrying."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def retrying(path: Path, operation: Callable[[], _T], *, timeout: float = LOCK_TIMEOUT) -> _T:
    """Run ``operation`` again while it fails because another process holds the lock.

    The operation must be a whole transaction (a failed attempt rolled back), so that running
    it again is safe.

    Raises:
        StoreError: The store stayed locked for ``timeout`` seconds.
    """
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

    retry = Retrying(
        retry=retry_if_exception(is_locked),
        stop=stop_after_delay(timeout),
        wait=wait_random_exponential(multiplier=0.02, max=0.5),
        reraise=True,
    )
    try:
        return retry(operation)
    except sqlite3.OperationalError as exc:
        if not is_locked(exc):
            raise
        raise StoreError(
            f"{path}: the run store stayed locked for {timeout:g} s: another process holds a "
            "long write transaction on it (a SQLite browser with unsaved changes?); close it "
            "and run again",
            path=path,
        ) from exc


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; any error rolls back and propagates."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.rollback()
        raise
    connection.execute("COMMIT")


def _not_a_store(path: Path, why: str) -> StoreError:
    return StoreError(
        f"{path}: not an aeval run store ({why}); move the file away, or give another path "
        "(--store PATH, AEVAL_STORE, or the store: key)",
        path=path,
    )


def schema_version(connection: sqlite3.Connection, path: Path) -> int:
    """The file's schema version: 0 for an empty database.

    Raises:
        StoreError: The file is a database of something else, or its version is unreadable.
    """
    tables = {
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if "aeval_schema" not in tables:
        if tables:
            shown = ", ".join(sorted(tables)[:5])
            raise _not_a_store(path, f"a SQLite database with other tables: {shown}")
        return 0
    found = connection.execute("SELECT version FROM aeval_schema").fetchall()
    if len(found) != 1 or not isinstance(found[0][0], int):
        raise _not_a_store(path, "its aeval_schema table does not hold one version number")
    version: int = found[0][0]
    return version


def _check_newer(path: Path, version: int, latest: int) -> None:
    if version > latest:
        from .._version import __version__

        raise StoreError(
            f"{path}: this run store was written by a newer aeval (schema version {version}; "
            f"aeval {__version__} reads versions up to {latest}): upgrade aeval "
            "(pip install -U aeval-engine), or give another path",
            path=path,
        )


def _migrate(connection: sqlite3.Connection, path: Path, migrations: Sequence[Migration]) -> None:
    latest = migrations[-1].version
    if schema_version(connection, path) == latest:
        return
    with transaction(connection):
        version = schema_version(connection, path)
        _check_newer(path, version, latest)
        if version == latest:
            return
        for step in migrations:
            if step.version <= version:
                continue
            try:
                step.apply(connection)
            except sqlite3.Error as exc:
                if is_locked(exc):
                    raise
                raise StoreError(
                    f"{path}: upgrading the run store from schema version {version} to "
                    f"{step.version} ({step.description}) failed: {exc}; the file was left "
                    "as it was",
                    path=path,
                ) from exc
        connection.execute("DROP TABLE IF EXISTS aeval_schema")
        connection.execute("CREATE TABLE aeval_schema (version INTEGER NOT NULL)")
        connection.execute("INSERT INTO aeval_schema (version) VALUES (?)", (latest,))


def _shard_view(connection: sqlite3.Connection) -> None:
    connection.create_function("aeval_shard", 1, shard_of_header, deterministic=True)
    connection.execute(
        "CREATE TEMP VIEW runs AS SELECT *, aeval_shard(header) AS shard FROM main.runs"
    )


_READ_AS_NEWER: dict[tuple[int, int], Callable[[sqlite3.Connection], None]] = {
    (1, 2): _shard_view,
    (2, 3): partial(_add_labels, prefix="temp."),
}
"""How a read-only connection reads an older file as the next version (temporary views)."""


def _connect_read_only(
    path: Path, migrations: Sequence[Migration], timeout: float
) -> sqlite3.Connection | None:
    """Open a store that cannot be written (a read-only file or directory), to read it.

    ``mode=ro`` first; when SQLite cannot create the ``-shm`` file beside it (a read-only
    directory), ``immutable=1``: the file is read as it is, which holds while nobody can
    write it. An older schema is read through temporary views; an empty file holds no run.
    """
    from urllib.parse import quote

    busy = busy_timeout(timeout)
    latest = migrations[-1].version
    failure: sqlite3.Error | None = None
    for options in ("mode=ro", "mode=ro&immutable=1"):
        try:
            connection = sqlite3.connect(
                f"file:{quote(os.fspath(path))}?{options}",
                uri=True,
                timeout=busy / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            failure = exc
            continue
        try:
            version = retrying(path, partial(schema_version, connection, path), timeout=timeout)
            _check_newer(path, version, latest)
            for step in range(max(version, 1), latest):
                shim = _READ_AS_NEWER.get((step, step + 1))
                if shim is None:
                    raise StoreError(
                        f"{path}: this read-only run store has schema version {version}, "
                        f"which this aeval reads only after upgrading the file to {latest}: "
                        "make it writable once (any aeval command that reads it upgrades it)",
                        path=path,
                    )
                shim(connection)
        except sqlite3.OperationalError as exc:
            connection.close()
            failure = exc
            continue
        except BaseException:
            connection.close()
            raise
        if version == 0:
            connection.close()
            return None
        return connection
    raise StoreError(f"{path}: cannot read the run store: {failure}", path=path) from failure


def connect(
    path: Path,
    *,
    create: bool,
    migrations: Sequence[Migration] = MIGRATIONS,
    timeout: float = LOCK_TIMEOUT,
) -> sqlite3.Connection | None:
    """Open the store at ``path``, creating it or bringing its schema up to date.

    The connection is in autocommit mode (transactions are explicit, see
    :func:`transaction`) and may be used from any thread, one at a time. A store that
    cannot be written (a read-only file or directory) is opened read-only to read it, and
    refused to write it.

    Args:
        path: The file.
        create: Create the file (and its directory) when it does not exist, and open it
            to write; otherwise a missing file gives ``None``.
        migrations: The schema's steps (tests add their own).
        timeout: Seconds to wait, in all, for another process's lock.

    Raises:
        StoreError: The file is not an aeval run store, was written by a newer aeval, cannot
            be created, cannot be written (``create``), or stayed locked.
    """
    if path.is_dir():
        raise StoreError(
            f"{path}: is a directory; the run store is a file (e.g. {path / 'runs.sqlite'})",
            path=path,
        )
    if path.exists() and not _writable(path):
        if create:
            raise read_only_error(path)
        return _connect_read_only(path, migrations, timeout)
    if not path.exists():
        if not create:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{path}: cannot create the run store's directory: {exc}", path=path
            ) from exc
    busy = busy_timeout(timeout)
    try:
        connection = sqlite3.connect(
            os.fspath(path),
            timeout=busy / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the run store: {exc}", path=path) from exc

    def prepare() -> None:
        connection.execute(f"PRAGMA busy_timeout = {busy}")
        connection.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        _migrate(connection, path, migrations)

    try:
        retrying(path, prepare, timeout=timeout)
    except StoreError:
        connection.close()
        raise
    except sqlite3.OperationalError as exc:
        connection.close()
        if is_read_only(exc):
            raise read_only_error(path) from exc
        raise StoreError(f"{path}: cannot open the run store: {exc}", path=path) from exc
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise _not_a_store(path, str(exc)) from exc
    return connection
