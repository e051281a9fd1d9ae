"""Smoke test of benchmarks/bench_online.py: it runs and prints its figures (no timing checks)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _benchmarks import quick_figures

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    done, figures = quick_figures(
        "bench_online.py", tmp_path_factory.mktemp("bench") / "figures.json"
    )
    return done.stdout, figures


def test_prints_both_sides_of_both_scenarios(quick_run: tuple[str, dict[str, Any]]) -> None:
    stdout, figures = quick_run
    assert "aeval online evaluation benchmark (quick mode)" in stdout
    assert "200 requests per side and repetition at concurrency 20, medians of 1" in stdout
    for name, latency in (("model", 200), ("saturated", 0)):
        assert f"{name}: model latency {latency} ms" in stdout
        for side in ("with", "without"):
            f = figures["scenarios"][name][side]
            assert re.search(
                rf"^{side} +{f['p50_ms']:.2f} +{f['p99_ms']:.2f} +{f['throughput']:.0f} +\S+$",
                stdout,
                re.MULTILINE,
            ), side
    verdict = figures["scenarios"]["model"]["verdict"]
    assert re.search(rf"throughput x\d\.\d{{3}} \({verdict}, goal < 5 % p99", stdout)


def test_figures_and_accounts(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    assert figures["quick"] is True
    for name in ("model", "saturated"):
        scenario = figures["scenarios"][name]
        assert (scenario["requests"], scenario["concurrency"]) == (200, 20)
        for side in ("with", "without"):
            f = scenario[side]
            assert len(f["runs"]) == 1 and f["p99_ms"] >= f["p50_ms"] > 0
        assert scenario["throughput_ratio"] == pytest.approx(
            scenario["with"]["throughput"] / scenario["without"]["throughput"]
        )
        accounts = scenario["accounts"]
        assert accounts["submitted"] == 250  # the warm-up's 50 and the 200 measured
        assert accounts["evaluated"] + accounts["sampled_out"] + accounts["dropped"] == 250
    assert "verdict" not in figures["scenarios"]["saturated"]
