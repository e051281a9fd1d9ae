"""The comparison as JSON (``comparison.json``), for programs and dashboards.

Numbers are kept as computed (not rounded); scores, differences and intervals are in percent
or percentage points, p-values between 0 and 1. Outputs are written as they are, or as a safe
stand-in where JSON cannot hold them (``aeval/_util/_jsonsafe.py``).
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

from .._compare._align import PairKey
from .._compare._comparison import ChangedPair, Comparison
from .._reporting._results import EvaluationRow
from .._util._jsonsafe import dumps

__all__ = ["FORMAT_VERSION", "comparison_to_dict", "render_json"]

FORMAT_VERSION = 1


def render_json(comparison: Comparison, *, margin: float = 0.0) -> str:
    """The comparison as indented JSON."""
    text, _ = dumps(comparison_to_dict(comparison, margin=margin), option=orjson.OPT_INDENT_2)
    return text.decode() + "\n"


def _scope(c: Comparison, margin: float) -> dict[str, Any]:
    low, high = c.interval
    return {
        "scope": c.scope,
        "baselineScore": c.baseline_score,
        "candidateScore": c.candidate_score,
        "baselineInterval": list(c.baseline_interval),
        "candidateInterval": list(c.candidate_interval),
        "difference": c.difference,
        "interval": {"confidence": c.confidence, "low": low, "high": high},
        "standardError": c.standard_error,
        "pValue": c.p_value,
        "adjustedPValue": c.adjusted_p_value,
        "test": c.test,
        "significant": c.significant,
        "verdict": c.verdict,
        "regression": c.is_significant_regression(margin),
        "samples": c.samples,
        "pairs": c.pairs,
        "minimumDetectableEffect": c.minimum_detectable_effect,
        "power": c.power_note,
        "counts": {
            "regressions": len(c.regressions),
            "fixes": len(c.fixes),
            "newErrors": len(c.new_errors),
            "newlyUnscored": len(c.newly_unscored),
            "onlyInBaseline": len(c.only_in_baseline),
            "onlyInCandidate": len(c.only_in_candidate),
        },
    }


def _key(key: PairKey) -> dict[str, Any]:
    return {"sample": key.sample, "strategy": key.strategy}


def _rows(rows: tuple[EvaluationRow, ...]) -> dict[str, Any]:
    first = rows[0]
    return {
        "passed": sum(row.passed for row in rows),
        "runs": len(rows),
        "outcomes": [row.outcome.value for row in rows],
        "output": first.output,
        "score": first.score,
        "explanation": first.explanation,
        "error": None if first.error is None else str(first.error),
    }


def _pair(pair: ChangedPair) -> dict[str, Any]:
    sides: dict[Literal["baseline", "candidate"], tuple[EvaluationRow, ...]] = {
        "baseline": pair.baseline,
        "candidate": pair.candidate,
    }
    return {
        "sample": pair.sample,
        "strategy": pair.strategy,
        "tags": list(pair.tags),
        "expectedOutput": pair.expected_output,
        **{side: _rows(rows) for side, rows in sides.items()},
    }


def comparison_to_dict(comparison: Comparison, *, margin: float = 0.0) -> dict[str, Any]:
    """The JSON document of ``comparison`` as plain data."""
    c = comparison
    document: dict[str, Any] = {
        "formatVersion": FORMAT_VERSION,
        "baseline": c.baseline_label,
        "candidate": c.candidate_label,
        "margin": margin,
        **_scope(c, margin),
        "warnings": list(c.warnings),
        "tags": {
            tag: {
                **_scope(s, margin),
                "regressions": [_key(p.key) for p in s.regressions],
                "fixes": [_key(p.key) for p in s.fixes],
            }
            for tag, s in c.tag_comparisons.items()
        },
        "strategies": {
            name: {
                **_scope(s, margin),
                "regressions": [_key(p.key) for p in s.regressions],
                "fixes": [_key(p.key) for p in s.fixes],
            }
            for name, s in c.strategy_comparisons.items()
        },
        "regressions": [_pair(p) for p in c.regressions],
        "fixes": [_pair(p) for p in c.fixes],
        "newErrors": [_pair(p) for p in c.new_errors],
        "newlyUnscored": [_pair(p) for p in c.newly_unscored],
        "onlyInBaseline": [_key(k) for k in c.only_in_baseline],
        "onlyInCandidate": [_key(k) for k in c.only_in_candidate],
    }
    return document
