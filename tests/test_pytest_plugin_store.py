"""``--aeval-store``: the plugin records each test's evaluation as a run in the run store."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_pytest_plugin_session import CONFTEST, EVALUATIONS, INI

from aeval import RunStore

pytest_plugins = ("pytester",)

NAMES = [
    "test_inner.py::test_full",
    "test_inner.py::test_full (#3)",
    "test_inner.py::test_full (one)",
    "test_inner.py::test_half",
]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("AEVAL_STORE", raising=False)
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=EVALUATIONS)
    return pytester


def stored(path: Path) -> list[Any]:
    """The runs in the store at ``path`` (``RunStore.runs()``)."""

    async def read() -> list[Any]:
        async with RunStore(path) as store:
            return await store.runs()

    return anyio.run(read)


def test_each_evaluation_is_a_run_named_after_its_test(project: pytest.Pytester) -> None:
    result = project.runpytest("--aeval-store")
    result.assert_outcomes(passed=3)
    path = project.path / ".aeval" / "runs.sqlite"
    runs = stored(path)
    assert sorted(run.name for run in runs) == NAMES
    by_name = {run.name: run for run in runs}
    assert (
        by_name["test_inner.py::test_half"].rows,
        by_name["test_inner.py::test_half"].score,
    ) == (
        2,
        50.0,
    )
    assert by_name["test_inner.py::test_full (one)"].rows == 1
    assert all(run.complete for run in runs)
    result.stdout.fnmatch_lines(
        [
            f"Stored 4 run(s) in {path} (aeval runs --store {path}):",
            f"    {by_name['test_inner.py::test_full'].id}  test_inner.py::test_full",
        ]
    )


def test_a_path_and_a_second_session_add_to_the_history(project: pytest.Pytester) -> None:
    project.runpytest("--aeval-store=history.sqlite").assert_outcomes(passed=3)
    project.runpytest("--aeval-store=history.sqlite").assert_outcomes(passed=3)

    async def history() -> list[float]:
        async with RunStore(project.path / "history.sqlite") as store:
            return [p.score for p in await store.history("test_inner.py::test_half", tag="u")]

    assert anyio.run(history) == [0.0, 0.0]
    assert not (project.path / ".aeval").exists()


def test_without_the_option_nothing_is_stored(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(passed=3)
    assert not (project.path / ".aeval").exists()
    assert "Stored" not in result.stdout.str()


def test_a_report_holding_only_failures_is_not_stored_and_says_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AEVAL_STORE", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(
        """
        from aeval import EvaluationSample, evaluate_sync, Scorer
        from aeval.strategies import ExactMatchStrategy
        import anyio

        def test_some(record_evaluation):
            report = anyio.run(lambda: Scorer(keep="failures").evaluate(
                [EvaluationSample("a", ["x"], "x")], lambda params: params[0],
                ExactMatchStrategy()))
            record_evaluation(report)
        """
    )
    result = pytester.runpytest("--aeval-store=runs.sqlite")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["aeval: *::test_some: not stored: its report holds only some of its rows*"]
    )
    assert stored(pytester.path / "runs.sqlite") == []


def test_an_unusable_store_is_a_usage_error(project: pytest.Pytester) -> None:
    (project.path / "broken.sqlite").write_text("not a database " * 100)
    result = project.runpytest("--aeval-store=broken.sqlite")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--aeval-store: *broken.sqlite: not an aeval run store*"])


def test_a_test_path_taken_as_the_store_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--aeval-store", "test_inner.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--aeval-store took 'test_inner.py' as the run store's path, but it is a test path*"]
    )


def test_aeval_store_gives_the_path(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEVAL_STORE", "env.sqlite")
    project.runpytest("--aeval-store").assert_outcomes(passed=3)
    assert len(stored(project.path / "env.sqlite")) == 4
    monkeypatch.setenv("AEVAL_STORE", "false")
    result = project.runpytest("--aeval-store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_xdist_workers_write_to_one_store(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_more=EVALUATIONS.replace("def test_half", "def test_half_again").replace(
            "def test_full", "def test_full_again"
        )
    )
    result = project.runpytest_subprocess("-n", "2", "--aeval-store=runs.sqlite")
    result.assert_outcomes(passed=6)
    runs = stored(project.path / "runs.sqlite")
    assert len(runs) == 8
    result.stdout.fnmatch_lines([f"Stored 8 run(s) in {project.path / 'runs.sqlite'} *"])


LOCK = """
import sqlite3

HELD = []


def test_lock_the_store():
    connection = sqlite3.connect("runs.sqlite", isolation_level=None)
    connection.execute("BEGIN EXCLUSIVE")
    HELD.append(connection)
"""


def test_a_store_locked_at_the_start_is_a_usage_error(project: pytest.Pytester) -> None:
    project.runpytest("--aeval-store=runs.sqlite").assert_outcomes(passed=3)
    with contextlib.closing(sqlite3.connect(project.path / "runs.sqlite")) as connection:
        connection.execute("BEGIN EXCLUSIVE")
        result = project.runpytest(
            "--aeval-store=runs.sqlite", "-o", "aeval_store_lock_timeout=0.1"
        )
        connection.rollback()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*--aeval-store: {project.path / 'runs.sqlite'}: the run store stayed locked for "
            "0.1 s (ini aeval_store_lock_timeout): another process holds a write transaction*"
        ]
    )
    assert len(stored(project.path / "runs.sqlite")) == 4


def test_a_store_locked_during_the_session_is_waited_for_once(project: pytest.Pytester) -> None:
    project.makepyfile(test_0lock=LOCK)
    result = project.runpytest_subprocess(
        "--aeval-store=runs.sqlite", "-o", "aeval_store_lock_timeout=0.1"
    )
    result.assert_outcomes(passed=4)
    output = result.stdout.str()
    assert output.count("stayed locked for 0.1 s") == 1, output
    result.stdout.fnmatch_lines(
        [
            "aeval: test_inner.py::test_half: not stored: *runs.sqlite: the run store stayed "
            "locked for 0.1 s*; the later evaluations of this session are not stored either "
            "(no further wait)",
        ]
    )
    assert "Stored" not in output
    assert stored(project.path / "runs.sqlite") == []
