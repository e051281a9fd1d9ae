"""Hand-made rows, reported the way a Scorer reports them: to build the reports of a run
(``keep="failures"``/``"none"``, the counts of a run that knows its shape) through the public
API."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    evaluate_sync,
)


def result_of(row: EvaluationRow) -> EvaluationResult:
    """The result a strategy returned to make ``row`` (raises for an error row)."""
    why = row.explanation
    if row.outcome is Outcome.ERROR:
        raise RuntimeError(why or "error")
    if row.outcome is Outcome.SKIPPED:
        return EvaluationResult(False, None, why, skipped=True)
    if row.outcome is Outcome.NOT_APPLICABLE:
        return EvaluationResult.not_applicable(why or "not applicable")
    if row.outcome is Outcome.UNSCORED:
        return EvaluationResult.unscored(why or "unscored")
    score = row.score if row.score is not None else float(row.passed)
    if row.passed:
        return EvaluationResult.passing(score, why)
    return EvaluationResult.failing(score, why)


def replayed(
    rows: Sequence[EvaluationRow], *, keep: Literal["all", "failures", "none"] = "all"
) -> EvaluationReport:
    """The report of a Scorer run whose function and strategies give back each row's output
    and result (see :func:`replay`)."""
    samples, target, strategies, repeats = replay(rows)
    return evaluate_sync(samples, target, *strategies, repeats=repeats, keep=keep)


def replay(
    rows: Sequence[EvaluationRow],
) -> tuple[list[EvaluationSample], Callable[..., Any], list[Any], int]:
    """The samples, function, strategies and repeats of a Scorer run that gives back each
    row's output and result.

    The Scorer must run one sample at a time (``concurrency=1``, the default), each
    sample's repeats in turn; a sample with fewer repeats repeats its last one.
    """
    ordered = sorted(rows, key=lambda row: row.sort_key)
    calls: dict[str, dict[int, list[EvaluationRow]]] = {}
    for row in ordered:
        calls.setdefault(row.name, {}).setdefault(row.repeat, []).append(row)
    repeats = max((len(by_repeat) for by_repeat in calls.values()), default=1)
    schedule = [
        by_repeat[sorted(by_repeat)[min(r, len(by_repeat) - 1)]]
        for by_repeat in calls.values()
        for r in range(repeats)
    ]
    outputs = deque(call[0].output for call in schedule)
    names = list(dict.fromkeys(row.strategy for row in sorted(ordered, key=lambda r: r.position)))
    results: dict[str, deque[EvaluationRow]] = {name or "": deque() for name in names}
    for call in schedule:
        for row in call:
            results[row.strategy or ""].append(row)

    class Replay:
        def __init__(self, name: str) -> None:
            self.name = name

        def evaluate(self, sample: EvaluationSample, _output: Any) -> EvaluationResult:
            row = results[self.name].popleft()
            assert row.name == sample.name
            return result_of(row)

    def target(*_: Any) -> Any:
        return outputs.popleft()

    samples = [next(iter(by_repeat.values()))[0].sample for by_repeat in calls.values()]
    return samples, target, [Replay(name or "") for name in names], repeats
