"""The run store when it cannot be written (read-only files and directories) or is locked by
another process while a run writes to it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from _cli import WIDTH, project, write_config

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
    StoreError,
)

__all__ = ["project"]

pytestmark = pytest.mark.anyio

WRITE = """
import sys, anyio
from aeval import EvaluationReport, EvaluationResult, EvaluationRow, EvaluationSample, RunStore
row = EvaluationRow.from_result(
    EvaluationSample("s", ["q"]), "check", "out", EvaluationResult.passing()
)
async def main():
    async with RunStore(sys.argv[1]) as store:
        await store.save(EvaluationReport([row]), "bot")
anyio.run(main)
"""


def report(count: int = 3, started: float = 1.0e9) -> EvaluationReport:
    rows = [
        EvaluationRow.from_result(
            EvaluationSample(f"s{i}", [i]),
            "check",
            i,
            EvaluationResult.from_boolean(i % 2 == 0),
            index=i,
        )
        for i in range(count)
    ]
    return EvaluationReport(rows, run=RunInfo(started_at=started, finished_at=started + 1))


def unprivileged(*args: str | Path) -> list[str]:
    """``args`` as a process that file permissions apply to (root without its overrides)."""
    command = [str(arg) for arg in args]
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root ignores file permissions, and setpriv (util-linux) is not installed")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]


def aeval(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        unprivileged(sys.executable, "-m", "aeval", *args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "COLUMNS": WIDTH},
    )


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[Path]:
    """A store holding two runs of "bot", in a directory of its own; made writable again at
    the end so that pytest can remove it."""
    directory = tmp_path / "shared"
    directory.mkdir()
    path = directory / "runs.sqlite"

    async def fill() -> None:
        async with RunStore(path) as store:
            await store.save(report(started=1.0e9), "bot")
            await store.save(report(started=1.0e9 + 60), "bot")

    anyio.run(fill)
    yield path
    directory.chmod(0o755)
    path.chmod(0o644)


def read_only(path: Path) -> None:
    path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)


def check_readable(path: Path) -> None:
    runs = aeval("runs", "--store", path, "--format", "json")
    assert runs.returncode == 0, runs.stderr
    assert [run["name"] for run in json.loads(runs.stdout)] == ["bot", "bot"]
    history = aeval("history", "bot", "--store", path, "--format", "json")
    assert history.returncode == 0, history.stderr
    assert [point["score"] for point in json.loads(history.stdout)["points"]] == [
        pytest.approx(200 / 3)
    ] * 2
    compare = aeval("compare", "bot@latest~1", "bot@latest", "--store", path)
    assert compare.returncode == 0, compare.stderr


def test_a_store_in_a_read_only_directory_can_be_read(stored: Path) -> None:
    read_only(stored.parent)
    check_readable(stored)
    assert sorted(os.listdir(stored.parent)) == ["runs.sqlite"]


def test_a_read_only_store_file_can_be_read_and_writing_it_is_a_clear_error(
    stored: Path,
) -> None:
    read_only(stored)
    check_readable(stored)
    write = subprocess.run(
        unprivileged(sys.executable, "-c", WRITE, stored), capture_output=True, text=True
    )
    assert write.returncode == 1
    assert f"StoreError: {stored}: the run store is read-only" in write.stderr
    assert "make it writable, or give another path" in write.stderr


def test_aeval_run_refuses_a_read_only_store_before_it_runs(stored: Path, project: Path) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: not_blank}]\n"
        "output: {dir: out}\n",
    )
    read_only(stored)
    done = aeval("run", config, "--store", stored, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{stored}: the run store is read-only" in done.stderr
    assert "--no-store" in done.stderr
    assert not (project / "out").exists()


def test_an_older_read_only_store_is_read_without_upgrading_it(stored: Path) -> None:
    connection = sqlite3.connect(stored, isolation_level=None)
    connection.execute("UPDATE runs SET header = json_set(header, '$.shard', '1/2') WHERE seq = 1")
    connection.execute("DROP TABLE labels")
    connection.execute("ALTER TABLE runs DROP COLUMN shard")
    connection.execute("UPDATE aeval_schema SET version = 1")
    connection.close()
    read_only(stored.parent)
    runs = aeval("runs", "--store", stored, "--format", "json", "--shards")
    assert runs.returncode == 0, runs.stderr
    assert [run["shard"] for run in json.loads(runs.stdout)] == ["1/2", None]
    runs = aeval("runs", "--store", stored, "--format", "json")
    assert len(json.loads(runs.stdout)) == 1
    connection = sqlite3.connect(f"file:{stored}?mode=ro", uri=True)
    assert connection.execute("SELECT version FROM aeval_schema").fetchone() == (1,)
    connection.close()


async def test_a_store_locked_by_another_process_does_not_hold_up_the_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    store = RunStore(path, timeout=5)
    await store.check()
    sink = store.sink("bot", batch=1, interval=0)
    await sink.run_started(RunInfo(started_at=1.0e9, samples_expected=3))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        for row in report().evaluations:
            await sink.send(row)  # before the fix: waited for the lock, then StoreError
        await sink.flush()
        assert (sink.rows_written, sink.rows_waiting) == (0, 3)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await sink.run_finished(RunInfo(started_at=1.0e9, finished_at=1.0e9 + 1, samples_expected=3))
    assert (sink.rows_written, sink.rows_waiting) == (3, 0)
    assert sink.run_id is not None
    loaded = await store.load(sink.run_id)
    assert [row.name for row in loaded.evaluations] == ["s0", "s1", "s2"]
    assert loaded.complete
    await store.aclose()


async def test_rows_held_for_a_locked_store_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store = RunStore(path, timeout=0.2)
    await store.check()
    sink = store.sink("bot", batch=1, interval=0, buffer=2)
    await sink.run_started(RunInfo(started_at=1.0e9))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        first, second, _ = report().evaluations
        await sink.send(first)
        with pytest.raises(StoreError, match=r"stayed locked for 0\.2 s"):
            await sink.send(second)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await store.aclose()
    with pytest.raises(ValueError, match="buffer must be an integer >= 1"):
        store.sink("bot", buffer=0)


def test_labels_are_read_from_read_only_stores_old_and_new(stored: Path) -> None:
    async def label() -> None:
        async with RunStore(stored) as store:
            await store.add_label(
                "latest", sample="s0", strategy="check", reviewer="ann", verdict="fail"
            )

    anyio.run(label)
    read_only(stored.parent)
    calibrated = aeval("calibrate", "latest", "--store", stored, "--format", "json")
    assert calibrated.returncode == 0, calibrated.stderr
    assert json.loads(calibrated.stdout)["review"]["falsePass"] == 1
    stored.parent.chmod(0o755)
    connection = sqlite3.connect(stored, isolation_level=None)
    connection.execute("DROP TABLE labels")
    connection.execute("UPDATE aeval_schema SET version = 2")
    connection.close()
    read_only(stored.parent)
    older = aeval("calibrate", "latest", "--store", stored)
    assert older.returncode == 2
    assert "no current review label in this run" in older.stderr
    connection = sqlite3.connect(f"file:{stored}?mode=ro", uri=True)
    assert connection.execute("SELECT version FROM aeval_schema").fetchone() == (2,)
    connection.close()
