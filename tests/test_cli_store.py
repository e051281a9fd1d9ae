"""``aeval run`` records each run in the run store; ``aeval runs`` and ``aeval history`` read it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from _cli import WIDTH, Cli, cli, project, write_config

from aeval import RunStore

__all__ = ["cli", "project"]

CONFIG = (
    "samples: samples.yaml\ntarget: cli_targets:{target}\n"
    "strategies: [{{name: exact_match}}, {{name: not_blank}}]\noutput: {{dir: out}}\n"
)
STORE = Path(".aeval", "runs.sqlite")


def runs_in(path: Path, name: str | None = None) -> list[tuple[str, str, float, int, bool]]:
    async def read() -> list[tuple[str, str, float, int, bool]]:
        async with RunStore(path) as store:
            return [(r.id, r.name, r.score, r.rows, r.complete) for r in await store.runs(name)]

    return anyio.run(read)


def stored_id(stdout: str) -> str:
    found = re.search(r"run id\s+(\d{8}-\d{6}-[0-9a-f]{4}) \(in (.+?)\)", stdout)
    assert found is not None, stdout
    return found.group(1)


def test_a_run_is_recorded_by_default_and_its_id_printed(project: Path, cli: Cli) -> None:
    cli.use_default_store()
    config = write_config(project, CONFIG.format(target="echo") + "labels: [v1]\n")
    result = cli("run", config, "--label", "nightly", cwd=project)
    assert result.returncode == 0, result.stderr
    run_id = stored_id(result.stdout)
    assert f"run id    {run_id} (in {STORE})" in result.stdout
    ((found, name, score, rows, complete),) = runs_in(project / STORE)
    report = json.loads((project / "out" / "report.json").read_text())
    assert (found, name, rows, complete) == (run_id, "aeval", 6, True)
    assert score == pytest.approx(report["globalScore"], abs=0.005)

    async def details() -> tuple[tuple[str, ...], str | None, float]:
        async with RunStore(project / STORE) as store:
            (run,) = await store.runs()
            loaded = await store.load("aeval@latest")
        return run.labels, run.config_hash, loaded.score

    labels, digest, loaded_score = anyio.run(details)
    assert labels == ("v1", "nightly")
    assert digest is not None and len(digest) == 16
    assert loaded_score == pytest.approx(report["globalScore"], abs=0.005)


def test_where_the_run_is_recorded(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AEVAL_STORE", raising=False)
    (project / "conf").mkdir()
    (project / "conf" / "samples.yaml").write_text((project / "samples.yaml").read_text())
    (project / "conf" / "cli_targets.py").write_text((project / "cli_targets.py").read_text())
    config = write_config(
        project / "conf",
        CONFIG.format(target="echo") + "name: bot\nstore: history/runs.sqlite\n",
    )
    assert cli("run", config, "--quiet", cwd=project).returncode == 0
    assert [run[1] for run in runs_in(project / "conf" / "history" / "runs.sqlite")] == ["bot"]
    env = {"AEVAL_STORE": str(project / "env.sqlite")}
    assert cli("run", config, "--quiet", "--name", "other", cwd=project, env=env).returncode == 0
    assert [run[1] for run in runs_in(project / "env.sqlite")] == ["other"]
    flag = project / "flag.sqlite"
    assert cli("run", config, "--quiet", "--store", flag, cwd=project, env=env).returncode == 0
    assert len(runs_in(flag)) == 1
    assert cli("run", config, "--quiet", "--no-store", cwd=project).returncode == 0
    assert cli("run", config, "--quiet", cwd=project, env={"AEVAL_STORE": "false"}).returncode == 0
    assert len(runs_in(project / "env.sqlite")) == 1
    assert len(runs_in(project / "conf" / "history" / "runs.sqlite")) == 1
    off = write_config(project, CONFIG.format(target="echo") + "store: false\n", "off.yaml")
    monkeypatch.delenv("AEVAL_STORE")
    result = cli("run", off, cwd=project)
    assert result.returncode == 0
    assert "run id" not in result.stdout
    assert not (project / STORE).exists()


def test_store_and_no_store_exclude_each_other(project: Path, cli: Cli) -> None:
    config = write_config(project, CONFIG.format(target="echo"))
    result = cli("run", config, "--store", "x.sqlite", "--no-store", cwd=project)
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr


def test_a_store_that_cannot_be_used_stops_before_anything_runs(project: Path, cli: Cli) -> None:
    cli.use_default_store()
    (project / "broken.sqlite").write_bytes(b"not a database, only text" * 200)
    config = write_config(project, CONFIG.format(target="echo") + "store: broken.sqlite\n")
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"aeval: error: {project / 'broken.sqlite'}: not an aeval run store (file is not a "
        "database); move the file away, or give another path"
    )
    assert result.stderr.rstrip().endswith(
        "or run without recording: --no-store (or store: false in aeval.yaml)"
    )
    assert "Traceback" not in result.stderr
    assert not (project / "out" / "rows.jsonl").exists()


def test_an_interrupted_run_is_recorded_partial(project: Path, cli: Cli) -> None:
    cli.use_default_store()
    config = write_config(project, CONFIG.format(target="interrupt") + "concurrency: 1\n")
    result = cli("run", config, cwd=project)
    assert result.returncode == 130
    run_id = stored_id(result.stdout)
    assert runs_in(project / STORE) == [(run_id, "aeval", 100.0, 2, False)]
    listed = cli("runs", cwd=project)
    assert listed.returncode == 0
    assert re.search(rf"{run_id} .* partial \(1 of 3 samples\)", listed.stdout)
    # 80 columns, as rich lays out a pipe or a CI log: the table keeps every column whole
    for command, note in (("runs", "partial (1 of 3 samples)"), ("history", "partial")):
        narrow = cli(
            command,
            *(["aeval"] if command == "history" else []),
            cwd=project,
            env={"COLUMNS": "80"},
        )
        assert narrow.returncode == 0, narrow.stderr
        line = next(line for line in narrow.stdout.splitlines() if run_id in line)
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d +- +100\.00% ", line), line
        assert line.rstrip().endswith(note), line


def test_runs_and_history(project: Path, cli: Cli) -> None:
    config = write_config(project, CONFIG.format(target="echo"))
    for target in ("echo", "shout", "echo"):
        config.write_text(CONFIG.format(target=target))
        assert cli("run", config, "--quiet", cwd=project).returncode in (0, 1)
    listed = cli("runs", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("aeval ") >= 3
    assert re.search(r"83\.33% 40\.33–97\.37\s+3 ", listed.stdout)
    history = cli("history", "aeval", cwd=project)
    assert history.returncode == 0, history.stderr
    assert "History of aeval (overall)" in history.stdout
    assert "pass rate  █▁█  83.33% → 83.33% (lowest 50.00%, highest 83.33%" in history.stdout
    smoke = cli(
        "history", "aeval", "--tag", "smoke", "--last", "2", "--format", "json", cwd=project
    )
    document = json.loads(smoke.stdout)
    assert (document["name"], document["tag"]) == ("aeval", "smoke")
    assert [point["score"] for point in document["points"]] == [50.0, 100.0]
    assert [point["samples"] for point in document["points"]] == [2, 2]
    markdown = cli("history", "aeval", "--strategy", "NotBlankStrategy", "--format", "markdown")
    assert markdown.stdout.startswith("# History of aeval (strategy NotBlankStrategy)")
    assert markdown.stdout.count("| 100.00% |") == 3
    page = project / "history.html"
    html = cli("history", "aeval", "--format", "html", "--output", page, "--since", "1d")
    assert html.returncode == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and text.count("<circle") == 3
    assert "Content-Security-Policy" in text and "<script" not in text
    everything = json.loads(cli("runs", "--format", "json", "--last", "2").stdout)
    assert [run["score"] for run in everything] == pytest.approx([50.0, 83.333333])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["history", "nobody"], "no run named 'nobody' in .*: the names there are 'aeval'"),
        (["history", "aeval", "--tag", "smok"], "--tag: no run of 'aeval' has rows of the tag"),
        (["history", "aeval", "--since", "soon"], "--since: expected a date"),
        (["history", "aeval", "--tag", "a", "--strategy", "b"], "not allowed with argument"),
        (["runs", "--store", "missing.sqlite"], "missing.sqlite: no run store there"),
    ],
)
def test_reading_errors_exit_2(project: Path, cli: Cli, argv: list[str], message: str) -> None:
    config = write_config(project, CONFIG.format(target="echo"))
    assert cli("run", config, "--quiet", cwd=project).returncode == 0
    result = cli(*argv, cwd=project)
    assert result.returncode == 2
    assert re.search(message, result.stderr), result.stderr


def test_reading_with_the_store_turned_off_says_how_to_read_one(tmp_path: Path, cli: Cli) -> None:
    result = cli("runs", cwd=tmp_path, env={"AEVAL_STORE": "off"})
    assert result.returncode == 2
    assert result.stderr == (
        "aeval: error: AEVAL_STORE=off turns the run store off: pass --store PATH to read one\n"
    )


BARRIER_TARGET = '''
import os
from pathlib import Path

import anyio

HERE = Path(__file__).parent
_ready = False


async def answer(params):
    """Wait until both processes have answered once (a barrier on files), then echo."""
    global _ready
    if not _ready:
        (HERE / f"ready-{os.getpid()}").touch()
        while len(list(HERE.glob("ready-*"))) < 2:
            await anyio.sleep(0.01)
        _ready = True
    return params[0]
'''


def test_two_runs_writing_at_once_both_land(tmp_path: Path) -> None:
    (tmp_path / "barrier_bot.py").write_text(BARRIER_TARGET, encoding="utf-8")
    with (tmp_path / "samples.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(3000):
            handle.write(
                json.dumps({"name": f"s{i}", "parameters": [f"q{i}"], "expected-output": f"q{i}"})
                + "\n"
            )
    config = write_config(
        tmp_path,
        "samples: samples.jsonl\ntarget: barrier_bot:answer\nconcurrency: 20\n"
        "strategies: [{name: exact_match}, {name: not_blank}]\n",
    )
    env = {**os.environ, "COLUMNS": WIDTH}
    env.pop("AEVAL_STORE", None)
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aeval",
                "run",
                str(config),
                "--quiet",
                "--output",
                f"out{n}",
                "--label",
                f"process-{n}",
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in (1, 2)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    for process, (stdout, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stdout + stderr
        assert "warning" not in stdout + stderr
    assert len(list(tmp_path.glob("ready-*"))) == 2

    async def read() -> list[tuple[str, int, bool, float, float]]:
        async with RunStore(tmp_path / STORE) as store:
            runs = await store.runs()
            for run in runs:
                report = await store.load(run.id)
                assert (report.evaluation_count, report.score) == (6000, 100.0)
            return [
                (run.labels[0], run.rows, run.complete, run.started_at, run.finished_at or 0.0)
                for run in runs
            ]

    first, second = anyio.run(read)
    assert sorted([first[0], second[0]]) == ["process-1", "process-2"]
    assert first[1:3] == second[1:3] == (6000, True)
    # the two runs overlapped in time: each started before the other finished
    assert first[3] < second[4] and second[3] < first[4]
