"""Smoke test of benchmarks/bench_calls.py: every case prints its count beside the hand-written
loop's and its budget (the counts themselves are not checked here: they are benchmarks)."""

from __future__ import annotations

from pathlib import Path

from _benchmarks import quick_figures


def test_every_case_prints_its_count_beside_the_baseline_and_budget(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_calls.py", tmp_path / "figures.json")
    assert set(figures) == {"scorer", "stream", "sink", "tool", "gc", "online", "cli"}
    for name, figure in figures.items():
        assert figure["aeval"] >= 0 and figure["baseline"] > 0, name
        assert figure["verdict"] in ("ok", "OVER"), name
        assert f"{name} " in done.stdout and "same run" in done.stdout
