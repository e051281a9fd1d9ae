"""Picking the rows a reviewer looks at: failures, disagreements, uncertain, queued, a draw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    RunStore,
    pick_rows,
)


def make(
    name: str,
    outcome: Outcome,
    score: float | None = None,
    metadata: dict[str, Any] | None = None,
    *,
    index: int = 0,
    output: str = "out",
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
        return EvaluationRow.from_error(sample, "judge", output, error, index=index)
    if metadata:
        result = result.with_metadata(metadata)
    return EvaluationRow.from_result(sample, "judge", output, result, index=index)


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


def labels(store: Path, **verdicts: str) -> tuple[Any, ...]:
    """The labels ``ann`` gave the rows of :data:`REPORT` in ``store``: ``name="fail"``
    labels the current output, ``name="stale fail"`` an earlier, different output."""

    async def label() -> tuple[Any, ...]:
        async with RunStore(store) as runs:
            older = [make(row.name, Outcome.PASSED, index=row.index, output="old") for row in ROWS]
            earlier = await runs.save(EvaluationReport(older), "bot")
            run = await runs.save(REPORT, "bot")
            for name, given in verdicts.items():
                stale, _, verdict = given.rpartition(" ")
                await runs.add_label(
                    earlier if stale else run,
                    sample=name,
                    strategy="judge",
                    reviewer="ann",
                    verdict=verdict,
                )
            return await runs.labels(run)

    return anyio.run(label)


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


def test_disagreements_are_split_judges_and_current_labels_against_the_verdict(
    tmp_path: Path,
) -> None:
    given = labels(
        tmp_path / "runs.sqlite", **{"pass": "fail", "fail": "fail", "near": "stale fail"}
    )
    picked = pick_rows(REPORT, pick="disagreements", labels=given)
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


def test_queued_are_the_queued_rows_nobody_labelled_yet(tmp_path: Path) -> None:
    current = labels(tmp_path / "current.sqlite", reviewed="pass")
    picked = pick_rows(REPORT, pick="queued", labels=current)
    assert names(picked) == ["queued"]
    earlier = labels(tmp_path / "earlier.sqlite", reviewed="stale pass")
    stale = pick_rows(REPORT, pick="queued", labels=earlier)
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
