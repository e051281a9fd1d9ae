"""Smoke test of benchmarks/bench_peers.py on the aeval side alone (no peer venvs, no timings)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _benchmarks import quick_figures, run_script

QUICK_CELLS = [
    ("a-2k", "aeval", 200, 0, 100),
    ("a-20k", "aeval", 2000, 0, 100),
    ("b-c100", "aeval", 500, 10, 100),
    ("b-c500", "aeval", 500, 10, 500),
    ("c-100k", "aeval", 5000, 0, 100),
    ("c-100k", "aeval stream keep=none", 5000, 0, 100),
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script("bench_peers.py", *args)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("bench") / "figures.json"
    done, figures = quick_figures("bench_peers.py", out, "--peer", "none")
    return done.stdout, done.stderr, figures


def test_prints_one_row_per_scenario_and_engine(
    quick_run: tuple[str, str, dict[str, Any]],
) -> None:
    stdout, stderr, _ = quick_run
    assert "aeval beside its peers (quick mode)" in stdout
    assert "medians of 1, a fresh process per run, timeout 200 s per run" in stdout
    header = stdout.splitlines()[4]
    assert header.split()[:2] == ["scenario", "engine"]
    for column in ("wall s [min-max]", "µs/case", "efficiency", "peak RSS MB", "wall × aeval"):
        assert column in header
    labels = {
        "a-2k": "a N=200 0 ms C=100",
        "a-20k": "a N=2,000 0 ms C=100",
        "b-c100": "b N=500 10 ms C=100",
        "b-c500": "b N=500 10 ms C=500",
        "c-100k": "c N=5,000 0 ms C=100",
    }
    for key, engine, n, latency, _ in QUICK_CELLS:
        efficiency = r"0\.\d{3}|\d\.\d{3}" if latency else "–"
        ratio = r"1\.00×" if engine == "aeval" else r"\d+\.\d\d×"
        pattern = (
            rf"^{re.escape(labels[key])} +{re.escape(engine)} +\d+\.\d{{3}} \[\S+\] +\d+\.\d +"
            rf"(?:{efficiency}) +\d+ +\d+ +{ratio} +{ratio} +{n}/{n} \(1/1 runs\)$"
        )
        assert re.search(pattern, stdout, re.MULTILINE), (key, engine)
    assert re.search(r"^versions: aeval \S+$", stdout, re.MULTILINE)
    assert len(re.findall(r"rep 1: ok \d+\.\d{3} s$", stderr, re.MULTILINE)) == 6


def test_json_figures(quick_run: tuple[str, str, dict[str, Any]]) -> None:
    _, _, figures = quick_run
    assert figures["quick"] is True
    assert figures["reps"] == 1
    assert figures["warmup"] == 20
    assert sorted(figures["engines"]) == ["aeval", "aeval stream keep=none"]
    cells = figures["cells"]
    assert [
        (c["scenario"], c["engine"], c["n"], c["latency_ms"], c["concurrency"]) for c in cells
    ] == (QUICK_CELLS)
    by_key = {(c["scenario"], c["engine"]): c for c in cells}
    for cell in cells:
        assert cell["status"] == "ok"
        assert cell["passed"] == [cell["n"]]
        [only] = cell["runs"]
        assert only["n"] == cell["n"]
        assert only["warmup_s"] > 0
        assert cell["wall_s"] == only["wall_s"] > 0
        assert cell["peak_rss_mb"] >= cell["rss_start_mb"] > 0
        ideal = cell["n"] * cell["latency_ms"] / 1000 / cell["concurrency"]
        rounding = 0.5e-4 / cell["n"] * 1e6 + 0.01
        if ideal:
            assert cell["efficiency"] == pytest.approx(ideal / cell["wall_s"])
            assert cell["per_case_us"] == pytest.approx(
                (cell["wall_s"] - ideal) / cell["n"] * 1e6, abs=rounding
            )
        else:
            assert cell["efficiency"] is None
            assert cell["per_case_us"] == pytest.approx(
                cell["wall_s"] / cell["n"] * 1e6, abs=rounding
            )
        reference = by_key[(cell["scenario"], "aeval")]
        assert cell["wall_ratio"] == pytest.approx(cell["wall_s"] / reference["wall_s"])
        assert cell["rss_ratio"] == pytest.approx(cell["peak_rss_mb"] / reference["peak_rss_mb"])
    assert by_key[("c-100k", "aeval stream keep=none")]["runs"][0]["peer"] == (
        "aeval stream keep=none"
    )


def test_a_run_over_the_timeout_is_reported_not_hidden(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    done = run("--quick", "--scenario", "a-2k", "--timeout", "0.001", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"^a N=200 0 ms C=100 +aeval +timeout \(> 0\.001 s\)( +–){7}$", done.stdout, re.MULTILINE
    )
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["status"] == "timeout"
    assert cell["ok_runs"] == 0
    assert cell["runs"][0]["timeout_s"] == 0.001
    assert cell["wall_ratio"] is None


def test_a_missing_peer_venv_names_the_path_and_the_fix(tmp_path: Path) -> None:
    done = run("--quick", "--peer", "deepeval", "--venv-dir", str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert (
        f"error: no venv for deepeval at {tmp_path / 'deepeval'}: pass --install to create it "
        "(pip install deepeval==4.3.1), or --venv-dir DIR where it is"
    ) in done.stderr
