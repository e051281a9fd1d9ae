"""The progress's counters: one strategy's shortcut counts what the general path does."""

from __future__ import annotations

from typing import Any

from aeval import EvaluationSample
from aeval._engine._progress import Tally
from aeval._reporting._results import EvaluationRow, Outcome

CASES: list[tuple[Outcome, dict[str, Any]]] = [
    (Outcome.PASSED, {}),
    (Outcome.FAILED, {"retries": 2}),
    (Outcome.ERROR, {"retries": True}),
    (Outcome.PASSED, {"retries": "3"}),
    (Outcome.UNSCORED, {"retries": 1}),
    (Outcome.SKIPPED, {}),
]


def _rows(strategies: int) -> list[EvaluationRow]:
    rows = []
    for index, (outcome, metadata) in enumerate(CASES):
        sample = EvaluationSample(f"s{index}", ["q"], "a")
        for position in range(strategies):
            rows.append(
                EvaluationRow(
                    sample,
                    f"st{position}",
                    "out",
                    outcome,
                    1.0,
                    metadata=metadata,
                    index=index,
                    position=position,
                )
            )
    return rows


def _counts(tally: Tally) -> tuple[int, ...]:
    return (tally.samples, tally.rows, tally.passed, tally.errors, tally.retries)


def test_one_strategy_s_tally_counts_what_the_general_path_does() -> None:
    one, two = Tally(1), Tally(2)
    for row in _rows(1):
        one.add(row)
    for row in _rows(2):
        two.add(row)

    assert _counts(one) == (6, 6, 2, 1, 3)
    assert _counts(two) == (6, 12, 4, 2, 6)
    assert one.stats() == "6 rows | pass 33.3% | 1 error | 3 retries"
