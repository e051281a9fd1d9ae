from __future__ import annotations

import json
from pathlib import Path

from _benchmarks import quick_figures

DATA = Path(__file__).resolve().parent / "data" / "safety"


def test_the_labelled_sets_have_at_least_200_texts_with_both_labels() -> None:
    for name, label in (("refusal.jsonl", "refusal"), ("injection.jsonl", "injection")):
        rows = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line]
        assert len(rows) >= 200, name
        assert {row[label] for row in rows} == {True, False}, name


def test_the_benchmark_prints_precision_and_recall_per_detector(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_guardrails.py", tmp_path / "out.json")
    assert "aeval guardrail detectors (quick mode)" in done.stdout
    for name in ("refusal", "injection"):
        row = figures[name]
        assert f"{name:<18} texts" in done.stdout
        assert 0.0 <= row["precision"] <= 1.0 and 0.0 <= row["recall"] <= 1.0
        assert row["texts"] >= 200 and row["examples_checked"] > 0
        assert row["examples_false_positives"] == []
