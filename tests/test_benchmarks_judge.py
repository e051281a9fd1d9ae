"""Smoke test of benchmarks/bench_judge.py: it runs and prints its figures (no timing checks)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _benchmarks import quick_figures


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    done, figures = quick_figures(
        "bench_judge.py", tmp_path_factory.mktemp("bench") / "figures.json"
    )
    assert done.stderr == ""
    return done.stdout, figures


def test_prints_both_sides_and_the_ratio(quick_run: tuple[str, dict[str, Any]]) -> None:
    stdout, figures = quick_run
    assert "aeval judge benchmark (quick mode)" in stdout
    assert re.search(
        r"^server: python -m aeval\.testing, a separate process, at http://127\.0\.0\.1:\d+/v1$",
        stdout,
        re.MULTILINE,
    )
    assert "300 judge rows at concurrency 100, medians of 1" in stdout
    assert re.search(
        r"^side +rows/s +wall s +passed +client CPU +CPU ms/row +server CPU$", stdout, re.M
    )
    for side in ("aeval", "raw"):
        rate = figures["sides"][side]["rows_per_s"]
        assert re.search(
            rf"^{side} +{rate:.0f} +\d+\.\d{{3}} \[.*\] +300/300 +\d+% +\d+\.\d{{3}} +\d+%$",
            stdout,
            re.M,
        ), side
    verdict = "PASS" if figures["ratio"] >= 0.8 else "MISS"
    assert f"ratio aeval/raw: {figures['ratio']:.2f}x ({verdict}, target >= 0.8x)" in stdout
    assert f"ratio by client CPU time per row: {figures['cpu_ratio']:.2f}x" in stdout


def test_figures(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    assert (figures["rows"], figures["concurrency"], figures["reps"]) == (300, 100, 1)
    assert (figures["quick"], figures["server"]) == (True, "process")
    aeval, raw = figures["sides"]["aeval"], figures["sides"]["raw"]
    for side in (aeval, raw):
        assert side["passed"] == [300]
        assert side["rows_per_s"] == pytest.approx(300 / side["wall_s"])
        assert side["walls"] == [side["wall_s"]]
        assert side["server_cpu"] >= 0
        assert side["client_cpu_ms_per_row"] > 0
    assert figures["ratio"] == pytest.approx(aeval["rows_per_s"] / raw["rows_per_s"])
    assert figures["cpu_ratio"] == pytest.approx(
        raw["client_cpu_ms_per_row"] / aeval["client_cpu_ms_per_row"]
    )
    assert figures["verdict"] == ("PASS" if figures["ratio"] >= 0.8 else "MISS")
