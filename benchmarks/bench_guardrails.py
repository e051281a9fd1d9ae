"""Precision and recall of the offline guardrail detectors on labelled sets.

The detectors are :func:`aeval.strategies.safety.find_refusal` (does an answer refuse) and
:func:`aeval.strategies.safety.find_injection` (does an input carry a prompt injection). The
sets, written for this measurement, are ``tests/data/safety/refusal.jsonl`` (refusals in
common and in other words, and near-misses such as "I can't wait to help!") and
``tests/data/safety/injection.jsonl`` (attacks, quoted or discussed injections that are not
attacks, benign inputs). The patterns were tuned on those two sets, so the script also
measures two smaller held-out sets written afterwards and never tuned on
(``refusal_heldout.jsonl``, ``injection_heldout.jsonl``): their figures are the honest ones.
It also counts false positives on the examples' own
expected outputs (refusal) and inputs (injection), which should all be clean.

Usage::

    python benchmarks/bench_guardrails.py                  # figures and the misses
    python benchmarks/bench_guardrails.py --quick --json out.json   # smoke mode (a test)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aeval.strategies.safety import find_injection, find_refusal  # noqa: E402

DATA = ROOT / "tests" / "data" / "safety"
EXAMPLES = ROOT / "examples"


def _rows(name: str) -> list[dict[str, Any]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _measure(
    rows: list[dict[str, Any]], text_key: str, label_key: str, detect: Callable[[str], bool]
) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    misses: list[str] = []
    false_alarms: list[str] = []
    by_kind: dict[str, list[int]] = {}
    for row in rows:
        found = detect(row[text_key])
        expected = bool(row[label_key])
        kind = by_kind.setdefault(row.get("kind", "?"), [0, 0])
        kind[0] += 1
        kind[1] += found == expected
        if found and expected:
            tp += 1
        elif found:
            fp += 1
            false_alarms.append(row[text_key])
        elif expected:
            fn += 1
            misses.append(row[text_key])
        else:
            tn += 1
    return {
        "texts": len(rows),
        "positives": tp + fn,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "false_positives": fp,
        "false_negatives": fn,
        "accuracy_by_kind": {k: v[1] / v[0] for k, v in sorted(by_kind.items())},
        "misses": misses,
        "false_alarms": false_alarms,
    }


def _walk(value: Any, keys: tuple[str, ...]) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys:
                yield from _strings(item)
            else:
                yield from _walk(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, keys)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | dict):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def _examples(keys: tuple[str, ...]) -> list[str]:
    texts: list[str] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        texts.extend(_walk(yaml.safe_load(path.read_text(encoding="utf-8")), keys))
    return texts


def main(argv: list[str] | None = None) -> int:
    """Print the figures; with ``--json``, write them too."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke mode (same data; no lists)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, Any]] = {}
    for suffix in ("", "_heldout"):
        figures[f"refusal{suffix}"] = _measure(
            _rows(f"refusal{suffix}.jsonl"),
            "text",
            "refusal",
            lambda t: find_refusal(t) is not None,
        )
        figures[f"injection{suffix}"] = _measure(
            _rows(f"injection{suffix}.jsonl"),
            "input",
            "injection",
            lambda t: bool(find_injection(t)),
        )
    outputs = _examples(("expected-output", "expected-outputs"))
    inputs = _examples(("parameters",))
    figures["refusal"]["examples_checked"] = len(outputs)
    figures["refusal"]["examples_false_positives"] = [t for t in outputs if find_refusal(t)]
    figures["injection"]["examples_checked"] = len(inputs)
    figures["injection"]["examples_false_positives"] = [t for t in inputs if find_injection(t)]
    print(f"aeval guardrail detectors{' (quick mode)' if args.quick else ''}")
    for name, row in figures.items():
        line = (
            f"{name:<18} texts {row['texts']:>4}  positives {row['positives']:>4}  "
            f"precision {row['precision']:.3f}  recall {row['recall']:.3f}"
        )
        if "examples_checked" in row:
            line += (
                f"  examples {row['examples_checked']} checked, "
                f"{len(row['examples_false_positives'])} false positives"
            )
        print(line)
        for kind, share in row["accuracy_by_kind"].items():
            print(f"  {kind:<12} correct {share:.3f}")
        if not args.quick:
            for text in row["misses"]:
                print(f"  missed: {text}")
            for text in row["false_alarms"] + row.get("examples_false_positives", []):
                print(f"  false alarm: {text}")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
