"""The run store's file: schema versions, migrations, foreign or corrupt files, and locks."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
    StoreError,
)
from aeval._store._database import RunDatabase, RunStart
from aeval._store._refs import parse_ref
from aeval._store._schema import MIGRATIONS, SCHEMA_VERSION, Migration, retrying
from aeval._store._values import parse_since

pytestmark = pytest.mark.anyio


_OPENED: list[RunDatabase] = []


@pytest.fixture(autouse=True)
def _close_databases() -> Iterator[None]:
    """Close each test's writers: a connection left to the collector warns (Python 3.13)."""
    yield
    while _OPENED:
        _OPENED.pop().close()


def store_at(path: Path, **options: Any) -> RunDatabase:
    """A writer of the store at ``path``, closed when the test ends."""
    _OPENED.append(RunDatabase(path, **options))
    return _OPENED[-1]


def report(count: int = 4) -> EvaluationReport:
    rows = [
        EvaluationRow.from_result(
            EvaluationSample(f"s{i}", [i], tags=["t"]),
            "s",
            i,
            EvaluationResult.from_boolean(i % 2 == 0),
            index=i,
        )
        for i in range(count)
    ]
    return EvaluationReport(rows, run=RunInfo(started_at=1.0e9, finished_at=1.0e9 + 5))


def version_of(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        (version,) = connection.execute("SELECT version FROM aeval_schema").fetchone()
    finally:
        connection.close()
    assert isinstance(version, int)
    return version


def downgrade_to_version_1(path: Path) -> None:
    """Make ``path`` a file as aeval wrote it at schema version 1 (no ``runs.shard``, no
    ``labels``)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("DROP TABLE labels")
        connection.execute("ALTER TABLE runs DROP COLUMN shard")
        connection.execute("UPDATE aeval_schema SET version = 1")
    finally:
        connection.close()


def add_notes(connection: sqlite3.Connection) -> None:
    connection.execute("ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT 'none'")
    connection.execute("UPDATE runs SET note = 'migrated'")


def broken(connection: sqlite3.Connection) -> None:
    connection.execute("ALTER TABLE runs ADD COLUMN half TEXT")
    connection.execute("ALTER TABLE no_such_table ADD COLUMN x TEXT")


NEXT = SCHEMA_VERSION + 1
VERSION_NEXT = Migration(NEXT, "a note per run", add_notes)


def test_a_new_store_is_at_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "runs.sqlite"
    database = store_at(path)
    database.check()
    database.close()
    assert version_of(path) == SCHEMA_VERSION == 3
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        connection.close()


def test_an_older_store_is_migrated_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    old = store_at(path)
    run_id = old.save(report(), RunStart("bot", report().run))
    old.close()
    assert version_of(path) == SCHEMA_VERSION
    new = store_at(path, migrations=(*MIGRATIONS, VERSION_NEXT))
    assert new.load(run_id).score == 50.0
    assert [run.id for run in new.runs("bot")] == [run_id]
    new.close()
    assert version_of(path) == NEXT
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("SELECT note FROM runs").fetchall() == [("migrated",)]
    finally:
        connection.close()


def test_a_version_1_store_gets_the_shard_of_each_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    old = store_at(path)
    whole = old.save(report(), RunStart("bot", report().run))
    shard = old.save(report(), RunStart("bot", report().run.replace(shard="1/2")))
    old.close()
    downgrade_to_version_1(path)
    assert version_of(path) == 1
    new = store_at(path)
    assert [run.id for run in new.runs("bot")] == [whole]
    assert [(run.id, run.shard) for run in new.runs("bot", shards=True)] == [
        (whole, None),
        (shard, "1/2"),
    ]
    new.close()
    assert version_of(path) == 3


def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    old = store_at(path)
    old.save(report(), RunStart("bot", report().run))
    old.close()
    failing = store_at(path, migrations=(*MIGRATIONS, Migration(NEXT, "a broken step", broken)))
    with pytest.raises(
        StoreError, match=rf"from schema version {SCHEMA_VERSION} to {NEXT} \(a broken step\)"
    ):
        failing.check()
    assert version_of(path) == SCHEMA_VERSION
    connection = sqlite3.connect(path)
    try:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(runs)")]
    finally:
        connection.close()
    assert "half" not in columns
    assert len(store_at(path).runs()) == 1


async def test_a_store_from_a_newer_aeval_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    newer = store_at(path, migrations=(*MIGRATIONS, VERSION_NEXT))
    newer.check()
    newer.close()
    with pytest.raises(StoreError, match=rf"written by a newer aeval \(schema version {NEXT}; "):
        await RunStore(path).runs()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not sqlite at all, just text" * 100, "not an aeval run store .*not a database"),
        (None, "a SQLite database with other tables: notes"),
    ],
)
async def test_a_file_that_is_not_a_store_is_refused(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "runs.sqlite"
    if content is None:
        connection = sqlite3.connect(path)
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.commit()
        connection.close()
    else:
        path.write_bytes(content)
    store = RunStore(path)
    with pytest.raises(StoreError, match=message) as caught:
        await store.save(report(), "bot")
    assert "give another path (--store PATH, AEVAL_STORE, or the store: key)" in str(caught.value)
    assert caught.value.path == str(path)


async def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory; the run store is a file"):
        await RunStore(tmp_path).check()


def test_a_locked_store_is_retried_until_it_is_free() -> None:
    attempts: list[int] = []

    def operation() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    assert retrying(Path("x.sqlite"), operation) == "done"
    assert len(attempts) == 3


def test_other_errors_are_not_retried() -> None:
    def operation() -> None:
        raise sqlite3.OperationalError("no such table: runs")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retrying(Path("x.sqlite"), operation)


def test_a_lock_held_too_long_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store_at(path).check()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        database = store_at(path, timeout=0.2)
        with pytest.raises(StoreError, match=r"stayed locked for 0.2 s: another process holds"):
            database.save(report(), RunStart("bot", report().run))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert database.runs() == []
    database.close()


def test_a_writer_waits_for_a_lock_that_is_released(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store_at(path).check()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute(
        "INSERT INTO rows (id, sample, idx, repeat, outcome, data) "
        "VALUES (1, 'x', 0, 0, 'passed', '{}')"
    )
    started = threading.Event()
    results: list[str] = []

    def write() -> None:
        database = store_at(path)
        database.check()
        started.set()
        results.append(database.save(report(), RunStart("bot", report().run)))
        database.close()

    writer = threading.Thread(target=write)
    writer.start()
    started.wait()
    holder.execute("ROLLBACK")
    holder.close()
    writer.join()
    assert len(results) == 1
    assert [run.id for run in store_at(path).runs()] == results


@pytest.mark.parametrize(
    ("text", "name", "back"),
    [
        ("latest", None, 0),
        ("latest~3", None, 3),
        ("bot@latest", "bot", 0),
        ("a@b@latest~2", "a@b", 2),
        ("20261130-1950", None, None),
    ],
)
def test_parse_ref(text: str, name: str | None, back: int | None) -> None:
    ref = parse_ref(text)
    assert (ref.name, ref.back, ref.is_id) == (name, back, back is None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-01", 1_793_491_200.0),
        ("2026-11-01T01:00", 1_793_494_800.0),
        ("2026-11-01T01:00+01:00", 1_793_491_200.0),
        ("7d", 1_000_000.0 - 7 * 86_400),
        ("12h", 1_000_000.0 - 12 * 3_600),
        ("1.5w", 1_000_000.0 - 1.5 * 604_800),
        (42, 42.0),
    ],
)
def test_parse_since(value: str | int, expected: float) -> None:
    assert parse_since(value, now=1_000_000.0) == expected


def test_parse_since_refuses_what_is_not_a_moment() -> None:
    with pytest.raises(TypeError, match="since: expected a date"):
        parse_since(True)
    with pytest.raises(ValueError, match="a duration back from now"):
        parse_since("last tuesday")
