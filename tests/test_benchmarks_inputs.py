"""Smoke tests of benchmarks/bench_cli_memory.py, bench_stream.py and bench_store.py: they run
and print their figures (no limits)."""

from __future__ import annotations

from pathlib import Path

from _benchmarks import quick_figures


def test_prints_both_engines_at_both_sizes(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_cli_memory.py", tmp_path / "figures.json")
    assert "aeval run peak memory over JSONL (quick mode)" in done.stdout
    assert "load whole (baseline)" in done.stdout
    assert figures["figures"]["sizes"] == [2000, 20000]
    largest = figures["figures"]["aeval run"][-1]
    assert (largest["samples"], largest["rows"], largest["failed"]) == (20000, 40000, 200)
    assert all(entry["exit"] == 0 for entry in figures["figures"]["load whole (baseline)"])


def test_stream_benchmark_prints_the_growth_of_both_engines(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_stream.py", tmp_path / "stream.json")
    assert "Samples.stream on one long line (quick mode)" in done.stdout
    assert "for 4x the size" in done.stdout
    assert figures["figures"]["sizes_mb"] == [1, 2, 4]
    assert (
        len(figures["figures"]["stream"]) == len(figures["figures"]["read whole (baseline)"]) == 3
    )


def test_store_benchmark_prints_the_store_beside_jsonl(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_store.py", tmp_path / "store.json")
    assert "Run store against rows.jsonl (quick mode)" in done.stdout
    assert "rows.jsonl (baseline)" in done.stdout
    assert "x writing rows.jsonl" in done.stdout
    assert figures["figures"]["rows"] == 10_000
    assert set(figures["figures"]["ratio"]) == {"rows.jsonl (baseline)", "store sink", "store save"}
    assert all(len(times) == 1 for times in figures["figures"]["seconds"].values())
