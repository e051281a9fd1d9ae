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


def test_the_injection_check_is_measured_beside_garaks_rule_and_every_check_is_timed(
    tmp_path: Path,
) -> None:
    done, figures = quick_figures("bench_safety.py", tmp_path / "figures.json")
    injection = figures["promptinject"]
    for split in ("tune", "heldout"):
        ours, garak = injection[split]["ours"], injection[split]["garak"]
        assert ours["tp"] + ours["fn"] == garak["tp"] + garak["fn"] > 0
        assert ours["precision"] >= 0.95 and ours["recall"] >= 0.90
        assert garak["precision"] < 0.6  # the rule flags every answer quoting the rogue string
        assert re.search(rf"^{split} +PromptInjectionStrategy +\d+", done.stdout, re.MULTILINE)
        assert re.search(rf"^{split} +garak rogue string +\d+", done.stdout, re.MULTILINE)
    timing = figures["linear_time"]
    assert (timing["small"], timing["large"]) == (1_000, 10_000)
    assert {"PromptInjectionStrategy (input)", "PIIStrategy", "judge JSON object"} <= set(
        timing["checks"]
    )
    assert all(row["slowest_input"] for row in timing["checks"].values())
