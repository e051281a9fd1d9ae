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


def test_cpu_scenario_prints_its_figures_and_baseline(
    quick_run: tuple[str, dict[str, Any]],
) -> None:
    stdout, figures = quick_run
    cpu = figures["scenarios"]["cpu"]
    assert (cpu["responses"], cpu["reps"]) == (2000, 3)
    assert cpu["rows"] == [4000, 4000, 4000]  # two checks on every response, none dropped
    assert cpu["cpu_us_per_response"] > 0 and cpu["by_hand_cpu_us_per_response"] > 0
    assert 0 < cpu["submit_us"] < cpu["cpu_us_per_response"]
    met = cpu["cpu_us_per_response"] <= 10 and cpu["submit_us"] <= 2
    assert cpu["verdict"] == ("PASS" if met else "MISS")
    assert "cpu: 2000 responses in process, two structural checks, medians of 3" in stdout
    assert re.search(
        rf"^online {cpu['cpu_us_per_response']:.2f} us CPU per response \(submit "
        rf"{cpu['submit_us']:.2f} us\); the same checks by hand .* \({cpu['verdict']}, goal",
        stdout,
        re.MULTILINE,
    )
