"""How ``aeval run`` ends: the first signal decides, SIGHUP stops cleanly, a baseline that
cannot be compared keeps the run's verdict, and huge numbers are refused clearly."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from _cli import Cli, cli, project, records_of, run_process, write_config

from aeval import EvaluationReport, RunInfo, merge_reports

__all__ = ["cli", "project"]

_SIGNALLING = (
    "import os, signal\n\nimport anyio\n\n\n"
    "async def hang_up(params):\n"
    "    os.kill(os.getpid(), signal.SIGHUP)\n"
    "    await anyio.sleep_forever()\n\n\n"
    "async def term_then_int(params):\n"
    "    os.kill(os.getpid(), signal.SIGTERM)\n"
    "    try:\n"
    "        await anyio.sleep_forever()\n"
    "    finally:\n"
    "        os.kill(os.getpid(), signal.SIGINT)\n"
)


@pytest.mark.parametrize(
    ("target", "code", "label"),
    [("hang_up", 129, "TERMINATED"), ("term_then_int", 143, "TERMINATED")],
    ids=["SIGHUP", "SIGTERM-then-SIGINT"],
)
def test_the_first_signal_decides_how_the_run_ends(
    project: Path, target: str, code: int, label: str
) -> None:
    (project / "signalling.py").write_text(_SIGNALLING)
    config = write_config(
        project,
        f"samples: samples.yaml\ntarget: signalling:{target}\nconcurrency: 1\nstore: false\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out, formats: [json]}\n",
    )

    result = run_process("run", config, "--quiet", cwd=project)

    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr == ""
    assert result.stdout == (
        f"{label}: run stopped after 0 of 3 samples; the report is partial and no threshold "
        "was checked\n"
    )
    end = records_of(project / "out" / "rows.jsonl")[-1]
    assert (end["record"], end["complete"]) == ("run_end", False)
    report = orjson.loads((project / "out" / "report.json").read_bytes())
    assert report["complete"] is False
    assert report["gate"] == {"verdict": "none", "checks": []}


def test_a_baseline_that_cannot_be_compared_keeps_the_runs_verdict(project: Path, cli: Cli) -> None:
    first = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: exact_match}]\n",
        name="first.yaml",
    )
    assert cli("run", first, "--quiet", "--output", project / "base", cwd=project).returncode == 0
    other = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: not_blank}]\n"
        "thresholds: {min_score: 50}\n",
    )
    baseline = project / "base" / "rows.jsonl"

    result = cli("run", other, "--quiet", "--baseline", baseline, cwd=project)

    assert result.returncode == 4
    assert result.stdout == (
        "PASSED: score 100.00% >= 50.00%\n"
        "BASELINE NOT COMPARED: the run was evaluated (its verdict is above), but its baseline "
        "cannot be compared with it\n"
    )
    assert result.stderr.startswith(f"aeval: error: --baseline {baseline}: the baseline (")
    assert "share no (sample, strategy) pair" in result.stderr
    assert (project / "aeval-results" / "report.json").is_file()

    missing = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
        "thresholds: {min_score: 50}\n",
        name="missing.yaml",
    )
    result = cli("run", missing, "--quiet", "--baseline", baseline, cwd=project)
    assert result.returncode == 1  # the run's own verdict comes first
    assert result.stdout.startswith("FAILED: score 0.00% < 50.00%\nBASELINE NOT COMPARED: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("compare", "latest~99999999999999999999", "latest"),
            "N in latest~N is at most 1,000,000,000",
        ),
        (
            ("compare", "bot@latest~" + "9" * 5000, "latest"),
            "N in latest~N is at most 1,000,000,000",
        ),
        (
            ("runs", "--last", "99999999999999999999"),
            "argument --last: expected an integer from 1 to 1,000,000, got '99999999999999999999'",
        ),
        (
            ("history", "bot", "--last", "9" * 5000),
            "argument --last: expected an integer from 1 to 1,000,000, got '99999999999",
        ),
        (
            ("run", "aeval.yaml", "--repeats", "99999999999999999999"),
            "argument --repeats: expected an integer from 1 to 10,000",
        ),
        (
            ("run", "aeval.yaml", "--concurrency", "99999999999999999999"),
            "argument --concurrency: expected an integer from 1 to 100,000",
        ),
        (
            ("run", "aeval.yaml", "--workers", "99999999999999999999"),
            "argument --workers: expected an integer from 1 to 10,000",
        ),
    ],
)
def test_huge_numbers_are_refused_clearly(
    project: Path, cli: Cli, args: tuple[str, ...], message: str
) -> None:
    write_config(
        project, "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
    )
    assert cli("run", "aeval.yaml", "--quiet", cwd=project).returncode == 0

    result = cli(*args, cwd=project)

    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_config_with_huge_repeats_is_a_config_error(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
        "repeats: 99999999999999999999\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert "repeats: must be at most 10000" in result.stderr


def test_a_merge_missing_most_of_a_million_shards_keeps_its_warning_short() -> None:
    run = RunInfo(shard="1/1000000", config_digest="c", dataset_digest="d", dataset_samples=3)
    merged = merge_reports(EvaluationReport(run=run), sources=["one"])
    [warning] = merged.run.warnings
    assert warning == (
        "shards 2/1000000, 3/1000000, 4/1000000, 5/1000000, 6/1000000, 7/1000000, 8/1000000, "
        "9/1000000, 10/1000000, 11/1000000 and 999,989 more missing: the report covers the "
        "other shards' samples only"
    )
