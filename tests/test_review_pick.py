"""Picking the rows a reviewer looks at: failures, disagreements, uncertain, queued, a draw."""

from __future__ import annotations

from typing import Any

import pytest

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    pick_rows,
)
from aeval._store import Label, RowLabel


def make(
    name: str,
    outcome: Outcome,
    score: float | None = None,
    metadata: dict[str, Any] | None = None,
    *,
    index: int = 0,
) -> EvaluationRow:
    result = {
        Outcome.PASSED: EvaluationResult(True, 1.0 if score is None else score),
        Outcome.FAILED: EvaluationResult(False, 0.0 if score is None else score),
        Outcome.UNSCORED: EvaluationResult.unscored("unreadable"),
        Outcome.SKIPPED: EvaluationResult.skip("gated"),
    }.get(outcome)
    queued = metadata is not None and metadata.pop("review_queued", False)
    sample = EvaluationSample(name, [name], metadata={"review_queued": True} if queued else None)
    if result is None:
        error = ErrorInfo.from_exception(ValueError("boom"), source="strategy")
        return EvaluationRow.from_error(sample, "judge", "out", error, index=index)
    if metadata:
        result = result.with_metadata(metadata)
    return EvaluationRow.from_result(sample, "judge", "out", result, index=index)


def label(name: str, verdict: str, *, stale: bool = False) -> RowLabel:
    made = Label("bot", name, "judge", "0" * 64, "ann", verdict, None, 1.0e9, "r1")  # type: ignore[arg-type]
    return RowLabel(made, name, 0, "judge", 0, stale=stale)


ROWS = [
    make("pass", Outcome.PASSED, 0.9, index=0),
    make("fail", Outcome.FAILED, 0.1, index=1),
    make("near", Outcome.PASSED, 0.55, index=2),
    make("scaled", Outcome.FAILED, 0.65, {"threshold": 0.7}, index=3),
    make("split", Outcome.PASSED, 0.7, {"agreement": 2 / 3, "votes": "2/3"}, index=4),
    make(
        "records",
        Outcome.FAILED,
        0.2,
        {"judges": [{"verdict": "passed"}, {"verdict": "failed"}, {"verdict": "unscored"}]},
        index=5,
    ),
    make("unscored", Outcome.UNSCORED, index=6),
    make("error", Outcome.ERROR, index=7),
    make("skipped", Outcome.SKIPPED, index=8),
    make("queued", Outcome.PASSED, 1.0, {"review_queued": True}, index=9),
    make("reviewed", Outcome.PASSED, 1.0, {"review_queued": True}, index=10),
]
REPORT = EvaluationReport(ROWS)


def names(rows: tuple[EvaluationRow, ...]) -> list[str]:
    return [row.name for row in rows]


def test_all_keeps_the_run_order() -> None:
    assert names(pick_rows(REPORT)) == [row.name for row in ROWS]


def test_failures_are_the_rows_that_did_not_pass_except_skipped() -> None:
    assert names(pick_rows(REPORT, pick="failures")) == [
        "fail",
        "scaled",
        "records",
        "unscored",
        "error",
    ]


def test_disagreements_are_split_judges_and_current_labels_against_the_verdict() -> None:
    labels = [label("pass", "fail"), label("fail", "fail"), label("near", "fail", stale=True)]
    picked = pick_rows(REPORT, pick="disagreements", labels=labels)
    assert names(picked) == ["pass", "split", "records"]
    assert names(pick_rows(REPORT, pick="disagreements")) == ["split", "records"]


def test_uncertain_are_scores_near_the_threshold_and_rows_without_a_verdict() -> None:
    assert names(pick_rows(REPORT, pick="uncertain")) == ["near", "scaled", "unscored", "error"]
    assert names(pick_rows(REPORT, pick="uncertain", margin=0.2)) == [
        "near",
        "scaled",
        "split",
        "unscored",
        "error",
    ]


def test_queued_are_the_queued_rows_nobody_labelled_yet() -> None:
    picked = pick_rows(REPORT, pick="queued", labels=[label("reviewed", "pass")])
    assert names(picked) == ["queued"]
    stale = pick_rows(REPORT, pick="queued", labels=[label("reviewed", "pass", stale=True)])
    assert names(stale) == ["queued", "reviewed"]


def test_a_draw_is_reproducible_for_a_seed_and_keeps_the_run_order() -> None:
    many = EvaluationReport([make(f"s{i}", Outcome.PASSED, index=i) for i in range(200)])
    first = pick_rows(many, sample=10, seed=3)
    assert first == pick_rows(many, sample=10, seed=3)
    assert len(first) == 10
    assert [row.index for row in first] == sorted(row.index for row in first)
    assert first != pick_rows(many, sample=10, seed=4)
    assert pick_rows(many.evaluations, sample=10, seed=3) == first
    assert len(pick_rows(many, sample=500)) == 200


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pick": "worst"}, "pick is one of all, failures, disagreements, uncertain, queued"),
        ({"sample": 0}, "sample is a number of rows >= 1, got 0"),
        ({"sample": True}, "sample is a number of rows >= 1, got True"),
        ({"margin": 2}, "margin is a score difference between 0 and 1, got 2"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pick_rows(REPORT, **options)
