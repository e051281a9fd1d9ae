"""The progress's counters: a run of one strategy (a shortcut) counts what a run of two does."""

from __future__ import annotations

from typing import Any

import pytest

from aeval import EvaluationResult, EvaluationSample, evaluate_sync

CASES: list[EvaluationResult | None] = [
    EvaluationResult.passing(),
    EvaluationResult.failing(0.0).with_metadata({"retries": 2}),
    None,  # the strategy raises: an error row
    EvaluationResult.passing().with_metadata({"retries": "3"}),
    EvaluationResult.unscored("no verdict").with_metadata({"retries": 1}),
    EvaluationResult(False, None, "not today", skipped=True),
]


def check(sample: EvaluationSample, output: Any) -> EvaluationResult:
    result = CASES[int(sample.name[1:])]
    if result is None:
        raise RuntimeError("boom")
    return result


def final_line(capsys: pytest.CaptureFixture[str], strategies: int) -> str:
    samples = [EvaluationSample(f"s{i}", ["q"], "a") for i in range(len(CASES))]
    evaluate_sync(samples, lambda q: "out", *[check] * strategies, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("aeval: done: 6/6 samples | "), lines
    return lines[-1].split(" | ", 1)[1].rsplit(" | ", 1)[0]


def test_one_strategy_s_tally_counts_what_the_general_path_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert final_line(capsys, 1) == "6 rows | pass 33.3% | 1 error | 3 retries"
    assert final_line(capsys, 2) == "12 rows | pass 33.3% | 2 errors | 6 retries"
