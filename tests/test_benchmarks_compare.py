"""Smoke tests of benchmarks/compare.py (the regression guard), bench_stream_run.py and
bench_import.py: they run and print their figures in the expected shape. No timing is
checked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from _benchmarks import quick_figures, run_script

ROOT = Path(__file__).resolve().parent.parent


def _worktrees() -> str:
    return subprocess.run(
        ["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def test_compare_runs_a_case_on_the_ref_and_the_tree_and_prints_the_ratio(
    tmp_path: Path,
) -> None:
    out = tmp_path / "figures.json"
    done = run_script("compare.py", "HEAD", "--cases", "tiny", "--quick", "--json", str(out))

    assert done.returncode == 0, done.stderr
    assert "ref HEAD (" in done.stdout
    assert "tree/ref" in done.stdout
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("tiny ")]
    assert row.rstrip().endswith("x")
    figures = json.loads(out.read_text())
    assert set(figures["seconds"]["tiny"]) == {"ref", "tree"}
    assert [len(runs) for runs in figures["seconds"]["tiny"].values()] == [1, 1]
    assert set(figures["ratios"]) == {"tiny"}
    assert "aeval-compare-" not in _worktrees()


def test_compare_refuses_an_unknown_case_or_ref() -> None:
    unknown_case = run_script("compare.py", "HEAD", "--cases", "nope")
    unknown_ref = run_script("compare.py", "no-such-ref-anywhere", "--cases", "tiny")

    assert unknown_case.returncode == 2
    assert "unknown case(s) nope: choose from import, overhead" in unknown_case.stderr
    assert unknown_ref.returncode != 0
    assert "'no-such-ref-anywhere' names no commit of this repository" in unknown_ref.stderr


def test_stream_run_prints_every_engine_and_the_goals(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_stream_run.py", tmp_path / "stream.json")

    assert "Streamed JSONL run end to end (quick mode)" in done.stdout
    assert "goal: aeval within 10x the baseline" in done.stdout
    (figure,) = figures["figures"]
    assert figure["samples"] == 2000
    assert set(figure["medians"]) == {
        "orjson (baseline)",
        "aeval",
        "Samples.stream alone",
        "aeval over a list",
        "aeval run (subprocess)",
    }
    assert all(run["samples"] == 2000 for runs in figure["runs"].values() for run in runs)


def test_import_benchmark_prints_both_sides_and_the_goals(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_import.py", tmp_path / "import.json")

    assert "import aeval (quick mode)" in done.stdout
    assert "goal: import aeval <= 60 ms in-process" in done.stdout
    assert "goal: fresh import aeval <= 1.5x anyio + orjson" in done.stdout
    best = figures["figures"]["best"]
    assert set(best) == {
        "python alone",
        "anyio + orjson (baseline)",
        "import aeval",
        "from aeval import Scorer, Samples",
    }
    assert all(len(runs["wall_ms"]) == 2 for runs in figures["figures"]["runs"].values())
    assert best["from aeval import Scorer, Samples"]["importtime_ms"] > 0
