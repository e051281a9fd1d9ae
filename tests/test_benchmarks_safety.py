"""Smoke test of benchmarks/bench_safety.py: it measures each detector and the seeds' outputs."""

from __future__ import annotations

import re
from pathlib import Path

from _benchmarks import quick_figures


def test_precision_and_recall_per_kind_and_the_seed_false_positives_are_printed(
    tmp_path: Path,
) -> None:
    done, figures = quick_figures("bench_safety.py", tmp_path / "figures.json")
    assert done.stderr == ""
    assert "aeval safety detector benchmarks (quick mode)" in done.stdout
    pii = figures["pii"]
    assert pii["texts"] == 60
    assert {"email", "phone"} <= set(pii["kinds"])
    assert pii["overall"]["tp"] > 0
    assert re.search(r"^overall +\d+ +\d+ +\d+ +[\d.]+ +[\d.]+$", done.stdout, re.MULTILINE)
    assert pii["seed_outputs"]["checked"] > 0
    assert re.search(r"^seed expected outputs: \d+ flagged of \d+$", done.stdout, re.MULTILINE)
