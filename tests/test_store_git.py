"""The run store's dirty flag: whether tracked files differ from the commit checked out."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from aeval import EvaluationResult, EvaluationSample, RunStore, Scorer

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "bot.py").write_text("ANSWER = 1\n")
    git(tmp_path, "add", "bot.py")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def dirty(where: Path, store: Path) -> bool | None:
    """The dirty flag the store records for a run made in ``where``."""

    def check(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(output == "a")

    async def run() -> bool | None:
        async with RunStore(store) as runs:
            await Scorer(sinks=[runs.sink("bot")]).evaluate(
                [EvaluationSample("s", ["q"], "a")], lambda q: "a", check
            )
            [last] = await runs.runs("bot", last=1)
        return last.git_dirty

    previous = Path.cwd()
    os.chdir(where)
    try:
        return anyio.run(run)
    finally:
        os.chdir(previous)


def test_a_clean_tree_is_not_dirty_and_untracked_files_do_not_count(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    store = tmp_path_factory.mktemp("store") / "runs.sqlite"
    assert dirty(repo, store) is False
    (repo / "notes.txt").write_text("not tracked\n")
    assert dirty(repo, store) is False


def test_a_changed_or_staged_tracked_file_makes_the_tree_dirty(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    store = tmp_path_factory.mktemp("store") / "runs.sqlite"
    (repo / "bot.py").write_text("ANSWER = 2\n")
    assert dirty(repo, store) is True
    git(repo, "add", "bot.py")
    assert dirty(repo, store) is True
    git(repo, "commit", "-q", "-m", "second")
    assert dirty(repo, store) is False


def test_outside_a_repository_it_cannot_be_told(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / ".git").write_text("gitdir: /nonexistent\n")  # stops git's search upwards
    assert dirty(outside, tmp_path / "runs.sqlite") is None


@pytest.mark.anyio
async def test_a_run_in_a_dirty_tree_is_stored_with_its_commit_marked_dirty(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    (repo / "bot.py").write_text("ANSWER = 2\n")
    samples = [EvaluationSample("s", ["q"], "a")]

    def check(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(output == "a")

    async with RunStore(tmp_path / "runs.sqlite") as store:
        await Scorer(sinks=[store.sink("bot")]).evaluate(samples, lambda q: "a", check)
        [run] = await store.runs("bot")
    assert run.git_commit is not None and len(run.git_commit) == 40
    assert run.git_dirty is True
