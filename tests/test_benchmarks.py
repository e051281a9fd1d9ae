"""Smoke test of benchmarks/bench_scorer.py: it runs and prints its figures (no timing checks)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _benchmarks import quick_figures


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    done, figures = quick_figures(
        "bench_scorer.py", tmp_path_factory.mktemp("bench") / "figures.json"
    )
    assert done.stderr == ""
    return done.stdout, figures


def test_prints_every_scenario_with_its_baseline(quick_run: tuple[str, dict[str, Any]]) -> None:
    stdout, _ = quick_run
    assert "aeval Scorer benchmarks (quick mode)" in stdout
    assert "(a) per-sample overhead at zero latency: 2000 samples, concurrency 100" in stdout
    assert "(b) efficiency (ideal / wall): 1000 samples of 10 ms" in stdout
    assert "(c) peak RSS growth, samples streamed from JSONL, concurrency 100" in stdout
    for header in (
        "aeval us/sample",
        "baseline us/sample",
        "aeval eff (best)",
        "baseline eff (best)",
    ):
        assert header in stdout
    assert re.search(
        r"^identity +\S+ \[.*\] +\S+ \[.*\] .* 2000/2000 +(PASS|MISS) \(<= 0\.35x\)$",
        stdout,
        re.MULTILINE,
    )
    assert re.search(r"^500 +0\.020 .* 1000/1000 +(PASS|MISS) \(>= 0\.9\)$", stdout, re.MULTILINE)
    for engine in ("aeval", "aeval-all", "baseline"):
        assert re.search(
            rf"^{engine} +\d+\.\d MB|^{engine} +-?\d+\.\d \(\d+ peak\)", stdout, re.MULTILINE
        ), engine
    assert re.search(
        r"^summary: overhead (PASS|MISS), efficiency (PASS|MISS), memory (PASS|MISS)$",
        stdout,
        re.MULTILINE,
    )


def test_overhead_figures(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    variants = figures["overhead"]["variants"]
    assert [v["function"] for v in variants] == [
        "identity",
        "identity+checkpoint",
        "identity, check in a thread",
        "identity, check @inline",
    ]
    for variant in variants:
        assert variant["aeval_passed"] == [2000]
        assert variant["baseline_passed"] == [2000]
        assert variant["aeval_wall_s"] > 0 and variant["baseline_wall_s"] > 0
        assert variant["ratio"] == pytest.approx(
            variant["aeval_wall_s"] / variant["baseline_wall_s"]
        )
        assert variant["aeval_us_per_sample"] == pytest.approx(variant["aeval_wall_s"] / 2000 * 1e6)
        assert variant["verdict"] == ("PASS" if variant["ratio"] <= 0.35 else "MISS")
        assert variant["aeval_cpu_us_per_sample"] > 0 and variant["baseline_cpu_us_per_sample"] > 0
        assert variant["cpu_ratio"] == pytest.approx(
            variant["aeval_cpu_us_per_sample"] / variant["baseline_cpu_us_per_sample"]
        )


def test_efficiency_figures(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    points = figures["efficiency"]["points"]
    assert [p["concurrency"] for p in points] == [100, 500]
    assert [p["ideal_s"] for p in points] == pytest.approx([0.1, 0.02])
    for point in points:
        assert point["aeval_passed"] == [1000]
        assert point["baseline_passed"] == [1000]
        assert point["aeval_efficiency"] == pytest.approx(point["ideal_s"] / point["aeval_wall_s"])
        assert point["aeval_best_efficiency"] == pytest.approx(
            point["ideal_s"] / min(point["aeval_walls"])
        )
    assert "verdict" not in points[0]
    expected = "PASS" if points[1]["aeval_efficiency"] >= 0.9 else "MISS"
    assert points[1]["verdict"] == figures["efficiency"]["verdict"] == expected


def test_memory_figures(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    memory = figures["memory"]
    assert memory["sizes"] == [1000, 5000]
    assert sorted(memory["engines"]) == ["aeval", "aeval-all", "baseline"]
    for engine in memory["engines"].values():
        for size in ("1000", "5000"):
            point = engine["by_size"][size]
            assert point["passed"] == [int(size)]
            assert point["peak_rss_mb"] > 0
        growth = engine["by_size"]["5000"]["growth_mb"] - engine["by_size"]["1000"]["growth_mb"]
        assert engine["extra_growth_mb"] == pytest.approx(growth)
    expected = "PASS" if memory["engines"]["aeval"]["extra_growth_mb"] <= 5 else "MISS"
    assert memory["verdict"] == expected
