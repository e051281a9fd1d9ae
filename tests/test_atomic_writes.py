"""Reports and ``--output`` files are written whole or not at all: a full disk leaves the
previous file intact and the command exits 3 naming the file."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from _cli import ROOT, Cli, cli, project, unmeasured, write_config

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    ReportWriteError,
)

__all__ = ["cli", "project"]

CONFIG = (
    "samples: samples.yaml\ntarget: cli_targets:echo\n"
    "strategies: [{name: exact_match}]\noutput: {dir: out, formats: [html, json]}\n"
)


def _no_space(descriptor: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that is full: flushing a file to it fails."""
    monkeypatch.setattr(os, "fsync", _no_space)


def _report() -> EvaluationReport:
    sample = EvaluationSample("one", ["q"], "a")
    row = EvaluationRow.from_result(sample, "exact", "a", EvaluationResult.passing())
    return EvaluationReport([row])


def _leftovers(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir() if path.name.endswith(".tmp"))


@pytest.mark.anyio
async def test_a_report_replaces_the_file_and_a_new_one_gets_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old")
    await _report().save_as(target)
    assert target.read_text().startswith("#")
    umask = os.umask(0)
    os.umask(umask)
    fresh = tmp_path / "fresh.json"
    await _report().save_as(fresh)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask
    assert _leftovers(tmp_path) == []


@pytest.mark.anyio
async def test_a_full_disk_leaves_the_previous_report_whole(
    tmp_path: Path, full_disk: None
) -> None:
    (tmp_path / "report.json").write_text('{"previous": true}')
    with pytest.raises(ReportWriteError) as raised:
        await _report().save(tmp_path, formats=["json"])
    assert raised.value.path == str(tmp_path / "report.json")
    assert str(tmp_path / "report.json") in str(raised.value)
    assert "No space left on device" in str(raised.value)
    assert raised.value.errno == errno.ENOSPC and isinstance(raised.value, OSError)
    assert (tmp_path / "report.json").read_text() == '{"previous": true}'
    assert _leftovers(tmp_path) == []
    with pytest.raises(ReportWriteError):
        await _report().save_as(tmp_path / "one.md")
    assert not (tmp_path / "one.md").exists()


def _limited(size: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="no file size limit here")
def test_aeval_run_on_a_full_disk_exits_3_and_keeps_the_previous_reports(project: Path) -> None:
    """A real limit on file sizes (as a full disk): the HTML report cannot be written."""
    config = write_config(project, CONFIG)
    env = {**os.environ, "AEVAL_STORE": "false", "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    command = [sys.executable, "-m", "aeval", "run", str(config), "--quiet"]
    first = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    assert first.returncode in (0, 1), first.stderr
    page = project / "out" / "report.html"
    before = page.read_bytes()
    assert len(before) > 8_000  # the first format written: over the limit below
    second = subprocess.run(  # unmeasured: coverage's data file would pass the limit at exit
        command,
        cwd=project,
        env=unmeasured(env),
        capture_output=True,
        text=True,
        preexec_fn=lambda: _limited(5_000),
        timeout=60,
    )
    assert second.returncode == 3, second.stderr
    assert f"aeval: error: {page}: cannot write the file:" in second.stderr
    assert "Traceback" not in second.stderr
    assert page.read_bytes() == before
    assert _leftovers(project / "out") == []


def test_history_and_compare_output_on_a_full_disk_exit_3(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(project, CONFIG)
    for _ in range(2):
        assert cli("run", config, "--quiet", "--format", "json", cwd=project).returncode in (0, 1)
    monkeypatch.setattr(os, "fsync", _no_space)
    for argv, name in (
        (["history", "aeval", "--format", "markdown"], "history.md"),
        (["compare", "aeval@latest~1", "aeval@latest"], "comparison.md"),
    ):
        target = project / name
        target.write_text("previous")
        result = cli(*argv, "--output", target, cwd=project)
        assert result.returncode == 3, (argv, result.stdout, result.stderr)
        assert f"{target}: cannot write the file: No space left on device" in result.stderr
        assert target.read_text() == "previous"
    assert _leftovers(project) == []


def test_merge_on_a_full_disk_exits_3_and_keeps_the_previous_rows(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(project, CONFIG)
    shards = [project / f"shard-{index}" for index in (1, 2)]
    for index, out in enumerate(shards, 1):
        assert cli("run", config, "--shard", f"{index}/2", "--output", out).returncode == 0
    merged = project / "merged"
    assert cli("merge", *shards, "--output", merged, "--quiet").returncode in (0, 1)
    before = (merged / "rows.jsonl").read_bytes()

    async def refuse(self: Any, target: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(anyio.Path, "replace", refuse)
    result = cli("merge", *shards, "--output", merged, "--quiet")
    assert result.returncode == 3, result.stderr
    assert f"{merged / 'rows.jsonl'}: cannot write the file: No space left" in result.stderr
    assert (merged / "rows.jsonl").read_bytes() == before
    assert _leftovers(merged) == []
