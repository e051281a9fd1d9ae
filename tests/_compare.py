"""Building runs for the comparison tests from a compact spec.

``run({"q1": {"exact": "PF"}, "q2": {"exact": "P"}})`` is a report whose sample ``q1`` has two
repeats of the strategy ``exact`` (passed, then failed) and ``q2`` one passed row. The letters
are outcomes: ``P`` passed, ``F`` failed, ``E`` error, ``U`` unscored, ``S`` skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
)

__all__ = ["binary_run", "rows_for", "run"]

Spec = Mapping[str, Mapping[str, str]]


def _row(
    sample: EvaluationSample,
    strategy: str,
    letter: str,
    output: Any,
    *,
    index: int,
    repeat: int,
    position: int,
) -> EvaluationRow:
    if letter == "E":
        error = ErrorInfo("RuntimeError", f"{strategy} broke on {sample.name}")
        return EvaluationRow.from_error(
            sample, strategy, output, error, index=index, repeat=repeat, position=position
        )
    if letter == "S":
        return EvaluationRow(
            sample,
            strategy,
            output,
            Outcome.SKIPPED,
            None,
            "skipped",
            index=index,
            repeat=repeat,
            position=position,
        )
    if letter == "U":
        result = EvaluationResult.unscored("the judge's reply could not be read")
    else:
        result = EvaluationResult.from_boolean(letter == "P", f"{strategy} said {letter}")
    return EvaluationRow.from_result(
        sample, strategy, output, result, index=index, repeat=repeat, position=position
    )


def rows_for(
    spec: Spec,
    *,
    tags: Mapping[str, Sequence[str]] | None = None,
    outputs: Mapping[str, Any] | None = None,
    expected: Mapping[str, Any] | None = None,
) -> list[EvaluationRow]:
    """The rows of ``spec`` (see the module docstring)."""
    rows = []
    for index, (name, strategies) in enumerate(spec.items()):
        sample = EvaluationSample(
            name,
            [f"question {name}"],
            (expected or {}).get(name, f"answer {name}"),
            tags=(tags or {}).get(name, ()),
        )
        for position, (strategy, letters) in enumerate(strategies.items()):
            for repeat, letter in enumerate(letters):
                output = (outputs or {}).get(name, f"answer {name}")
                rows.append(
                    _row(
                        sample,
                        strategy,
                        letter,
                        output,
                        index=index,
                        repeat=repeat,
                        position=position,
                    )
                )
    return rows


def run(spec: Spec, **options: Any) -> EvaluationReport:
    """A report of ``spec`` (see :func:`rows_for` for the options)."""
    return EvaluationReport(rows_for(spec, **options))


def binary_run(verdicts: Sequence[bool], *, strategy: str = "exact") -> EvaluationReport:
    """One row per sample ``s0``, ``s1``…: the McNemar case."""
    return run({f"s{i}": {strategy: "P" if ok else "F"} for i, ok in enumerate(verdicts)})
