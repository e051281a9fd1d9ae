"""Smoke test of benchmarks/bench_trace.py: it runs, checks isolation, prints its figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _benchmarks import quick_figures


def test_every_trace_holds_its_own_calls_and_the_figures_are_printed(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_trace.py", tmp_path / "figures.json")
    assert done.stderr == ""
    stdout = done.stdout
    assert "aeval trace benchmarks (quick mode)" in stdout
    isolation = figures["isolation"]
    assert isolation["exact"] == isolation["n"] == 300
    assert isolation["mismatches"] == []
    assert isolation["calls"] >= isolation["n"]
    assert re.search(r"^300 +200 +\d+ +\S+ +300/300 +PASS *$", stdout, re.MULTILINE)
    sources = [source["source"] for source in figures["cost"]["sources"]]
    assert sources == [
        "@aeval.tool (sync)",
        "@aeval.tool (async)",
        "record_tool_call",
        "httpx_event_hooks",
    ]
    for source in sources:
        assert re.search(rf"^{re.escape(source)} +\S+ +\S+ +\S+ +(PASS|MISS)", stdout, re.M)
    floors = figures["cost"]["hook_floors"]
    assert list(floors) == ["a hook: context, status", "+ keep a fixed call, snapshot"]
    shown = "; ".join(f"{label} {cost:.2f} us" for label, cost in floors.items())
    assert f"under the hooks, the same way (no target): {shown}" in stdout
    overhead = figures["overhead"]
    assert overhead["passed"] == {"on": [2000], "off": [2000], "baseline": [2000]}
    assert re.search(r"^tracing on / off: \d+\.\d+ per sample", stdout, re.MULTILINE)
    assert overhead["cpu_ratio"] == pytest.approx(
        overhead["cpu_us_per_sample"]["on"] / overhead["cpu_us_per_sample"]["off"]
    )
    assert re.search(rf"^CPU time on / off: {overhead['cpu_ratio']:.3f} per sample", stdout, re.M)
    assert re.search(
        r"^summary: isolation PASS, cost (PASS|MISS), overhead (PASS|MISS)$", stdout, re.MULTILINE
    )
