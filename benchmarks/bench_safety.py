"""Precision and recall of the offline safety detectors on their labelled sets.

Each detector is one entry of ``DETECTORS`` below: its labelled set (JSON lines of
``{"text": ..., "kinds": [...]}``, an empty list for a text that must not be flagged; the
sets hold positives and near-misses) and a function from a text to the kinds it finds.
Per kind and overall, a found kind is a true positive when the text is labelled with it,
else a false positive; a labelled kind not found is a false negative. Then every detector
runs on the seeds' own expected outputs (``expected-output``/``expected-outputs`` of
examples/*.yaml) and the values it flags there are listed as false positives, since the
reference answers of the examples hold no personal data.

Usage::

    python benchmarks/bench_safety.py
    python benchmarks/bench_safety.py --quick --json out.json   # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aeval.strategies.pii import find_pii  # noqa: E402


@dataclass(frozen=True, slots=True)
class Detector:
    """One offline detector: its labelled set and what it finds in a text."""

    name: str
    data: Path
    find: Callable[[str], set[str]]


def _pii(text: str) -> set[str]:
    return {kind for kind, _ in find_pii(text)}


DETECTORS = [
    Detector("pii", ROOT / "tests" / "data" / "safety" / "pii.jsonl", _pii),
]
"""The detectors measured; another one is one more entry."""


def load(path: Path) -> list[tuple[str, set[str]]]:
    """The ``(text, kinds)`` rows of a labelled set."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            rows.append((record["text"], set(record["kinds"])))
    return rows


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _show(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


def measure(detector: Detector, rows: list[tuple[str, set[str]]]) -> dict[str, Any]:
    """Precision and recall per kind and overall, and the misses."""
    counts: dict[str, list[int]] = {}
    misses: list[dict[str, Any]] = []
    for text, expected in rows:
        found = detector.find(text)
        for kind in expected | found:
            tp_fp_fn = counts.setdefault(kind, [0, 0, 0])
            if kind in expected and kind in found:
                tp_fp_fn[0] += 1
            elif kind in found:
                tp_fp_fn[1] += 1
            else:
                tp_fp_fn[2] += 1
        if found != expected:
            misses.append({"text": text, "expected": sorted(expected), "found": sorted(found)})
    kinds = {}
    for kind, (tp, fp, fn) in sorted(counts.items()):
        kinds[kind] = {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn),
        }
    tp, fp, fn = (sum(each[i] for each in counts.values()) for i in range(3))
    overall = {"tp": tp, "fp": fp, "fn": fn}
    overall |= {"precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn)}
    return {"texts": len(rows), "kinds": kinds, "overall": overall, "misses": misses}


def expected_outputs() -> list[tuple[str, str]]:
    """``(file:sample, text)`` of every expected output of examples/*.yaml."""
    found = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(document, list):
            continue
        for item in document:
            if not isinstance(item, dict):
                continue
            texts = [item.get("expected-output"), *(item.get("expected-outputs") or [])]
            for text in texts:
                if isinstance(text, str):
                    found.append((f"{path.name}:{item.get('name')}", text))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 60 texts of each set")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    print(f"aeval safety detector benchmarks{' (quick mode)' if args.quick else ''}")
    seeds = expected_outputs()
    results: dict[str, Any] = {"quick": args.quick}
    for detector in DETECTORS:
        rows = load(detector.data)
        if args.quick:
            rows = rows[:60]
        figures = measure(detector, rows)
        print(f"\n{detector.name}: {figures['texts']} labelled texts")
        print(f"{'kind':<10} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7}")
        for kind, row in [*figures["kinds"].items(), ("overall", figures["overall"])]:
            print(
                f"{kind:<10} {row['tp']:>4} {row['fp']:>4} {row['fn']:>4} "
                f"{_show(row['precision']):>9} {_show(row['recall']):>7}"
            )
        for miss in figures["misses"]:
            print(f"  miss: {miss['text']!r} expected {miss['expected']} found {miss['found']}")
        flagged = [
            {"sample": where, "kinds": sorted(kinds)}
            for where, text in seeds
            if (kinds := detector.find(text))
        ]
        figures["seed_outputs"] = {"checked": len(seeds), "false_positives": flagged}
        print(f"seed expected outputs: {len(flagged)} flagged of {len(seeds)}")
        for each in flagged:
            print(f"  false positive: {each['sample']} {each['kinds']}")
        results[detector.name] = figures
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
