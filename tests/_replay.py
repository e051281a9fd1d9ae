"""Hand-made rows, reported the way a Scorer reports them: to build reports that keep only
some of their rows (``keep="failures"``/``"none"``) through the public API."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    evaluate_sync,
)


def replayed(
    rows: Sequence[EvaluationRow], *, keep: Literal["all", "failures", "none"] = "all"
) -> EvaluationReport:
    """The report of a Scorer run whose function and strategy give back each row's output,
    outcome and score.

    The rows share one strategy. The Scorer runs every sample as often as the most repeated
    one (one at a time, each sample's repeats in turn); a sample with fewer rows repeats its
    last one.
    """
    ordered = sorted(rows, key=lambda row: row.sort_key)
    [strategy] = {row.strategy for row in ordered}
    by_name: dict[str, list[EvaluationRow]] = {}
    for row in ordered:
        by_name.setdefault(row.name, []).append(row)
    repeats = max((len(kept) for kept in by_name.values()), default=1)
    schedule = [kept[min(r, len(kept) - 1)] for kept in by_name.values() for r in range(repeats)]
    outputs = deque(row.output for row in schedule)
    results = deque(schedule)

    class Replay:
        name = strategy

        def evaluate(self, sample: EvaluationSample, _output: Any) -> EvaluationResult:
            row = results.popleft()
            assert row.name == sample.name
            score = row.score if row.score is not None else float(row.passed)
            if row.passed:
                return EvaluationResult.passing(score, row.explanation)
            return EvaluationResult.failing(score, row.explanation)

    def target(*_: Any) -> Any:
        return outputs.popleft()

    samples = [kept[0].sample for kept in by_name.values()]
    return evaluate_sync(samples, target, Replay(), repeats=repeats, keep=keep)
