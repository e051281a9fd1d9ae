"""Calibrating a judge from stored labels, and the reviewers' agreement, checked against
statsmodels."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
    calibrate_labels,
)

pytestmark = pytest.mark.anyio

inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
numpy = pytest.importorskip("numpy")

COUNT = 60
RNG = random.Random(5)
VERDICTS = [RNG.random() < 0.55 for _ in range(COUNT)]
TRUTH = [v if RNG.random() < 0.8 else not v for v in VERDICTS]
ANN = TRUTH
BOB = [t if RNG.random() < 0.85 else not t for t in TRUTH]
CY = [t if RNG.random() < 0.75 else not t for t in TRUTH]


def sample(i: int) -> EvaluationSample:
    metadata = {"label": "pass" if TRUTH[i] else "fail"} if i % 3 == 0 else None
    return EvaluationSample(f"s{i:02d}", [i], metadata=metadata)


def make_report(outputs: list[str] | None = None) -> EvaluationReport:
    rows = []
    for i in range(COUNT):
        output = outputs[i] if outputs is not None else f"answer {i}"
        judged = EvaluationResult(VERDICTS[i], 0.9 if VERDICTS[i] else 0.1, f"because {i}")
        rows.append(EvaluationRow.from_result(sample(i), "judge", output, judged, index=i))
        exact = EvaluationResult.from_boolean(i % 2 == 0)
        rows.append(EvaluationRow.from_result(sample(i), "exact", output, exact, index=i))
    return EvaluationReport(rows, run=RunInfo(started_at=1.0e9, finished_at=1.0e9 + 1))


async def label_all(store: RunStore, run_id: str, reviewers: dict[str, list[bool]]) -> None:
    for name, verdicts in reviewers.items():
        for i, passed in enumerate(verdicts):
            if name == "cy" and i % 4 == 3:
                continue  # cy skipped some rows: Fleiss counts the rows all three labelled
            await store.add_label(
                run_id,
                sample=f"s{i:02d}",
                strategy="judge",
                reviewer=name,
                verdict="pass" if passed else "fail",
            )


def table(first: list[bool], second: list[bool]) -> Any:
    counts = numpy.zeros((2, 2))
    for a, b in zip(first, second, strict=True):
        counts[0 if a else 1][0 if b else 1] += 1
    return counts


async def test_the_judge_against_one_reviewer_matches_statsmodels(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(make_report(), "bot")
        await label_all(store, run_id, {"ann": ANN, "bob": BOB})
        calibration = await store.calibrate(run_id, strategy="judge", reviewer="ann")
    review = calibration.review
    theirs = inter_rater.cohens_kappa(table(ANN, VERDICTS))
    assert review.confusion == (
        (
            sum(a and v for a, v in zip(ANN, VERDICTS, strict=True)),
            sum(a and not v for a, v in zip(ANN, VERDICTS, strict=True)),
        ),
        (
            sum(not a and v for a, v in zip(ANN, VERDICTS, strict=True)),
            sum(not a and not v for a, v in zip(ANN, VERDICTS, strict=True)),
        ),
    )
    assert review.accuracy == pytest.approx(
        sum(a == v for a, v in zip(ANN, VERDICTS, strict=True)) / COUNT
    )
    assert review.kappa == pytest.approx(theirs.kappa, abs=1e-12)
    stats = review.statistics
    assert stats is not None
    assert stats.standard_error == pytest.approx(theirs.std_kappa, abs=1e-12)
    low, high = review.kappa_interval() or (0.0, 0.0)
    assert (low, high) == pytest.approx((theirs.kappa_low, theirs.kappa_upp), abs=1e-9)
    wrong = [f"s{i:02d}" for i in range(COUNT) if ANN[i] != VERDICTS[i]]
    assert [d.sample for d in review.disagreements] == wrong
    assert calibration.reviewers == ("ann",)
    assert calibration.strategy == "judge"


async def test_two_reviewers_agree_by_cohens_kappa(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(make_report(), "bot")
        await label_all(store, run_id, {"ann": ANN, "bob": BOB})
        calibration = await store.calibrate(run_id)
    agreement = calibration.agreement
    assert agreement is not None
    assert agreement.reviewers == ("ann", "bob")
    theirs = inter_rater.cohens_kappa(table(ANN, BOB))
    assert agreement.kappa == pytest.approx(theirs.kappa, abs=1e-12)
    pair = agreement.pairs[0]
    assert pair.rows == COUNT
    assert pair.statistics is not None
    assert pair.statistics.standard_error == pytest.approx(theirs.std_kappa, abs=1e-12)
    assert "ann / bob: kappa" in agreement.describe()
    # without --reviewer a row's label is the reviewers' majority; a 1-1 split is a tie
    ties = sum(a != b for a, b in zip(ANN, BOB, strict=True))
    assert calibration.ties == ties
    assert calibration.review.rows == COUNT - ties


async def test_three_reviewers_agree_by_fleiss_kappa(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(make_report(), "bot")
        await label_all(store, run_id, {"ann": ANN, "bob": BOB, "cy": CY})
        calibration = await store.calibrate(run_id, strategy="judge")
    agreement = calibration.agreement
    assert agreement is not None
    full = [i for i in range(COUNT) if i % 4 != 3]
    counts = numpy.array(
        [[sum(r[i] for r in (ANN, BOB, CY)), 3 - sum(r[i] for r in (ANN, BOB, CY))] for i in full]
    )
    assert agreement.rows == len(full)
    assert agreement.fleiss == pytest.approx(inter_rater.fleiss_kappa(counts), abs=1e-12)
    assert agreement.kappa == agreement.fleiss
    assert [p.reviewers for p in agreement.pairs] == [("ann", "bob"), ("ann", "cy"), ("bob", "cy")]
    ann_cy = agreement.pairs[1]
    theirs = inter_rater.cohens_kappa(table([ANN[i] for i in full], [CY[i] for i in full]))
    assert ann_cy.kappa == pytest.approx(theirs.kappa, abs=1e-12)
    assert "Fleiss' kappa" in agreement.describe()
    votes = [[ANN[i], BOB[i], *([CY[i]] if i in full else [])] for i in range(COUNT)]
    decided = [(i, 2 * sum(v) > len(v)) for i, v in enumerate(votes) if 2 * sum(v) != len(v)]
    assert calibration.ties == COUNT - len(decided)
    assert calibration.review.agreed == sum(label == VERDICTS[i] for i, label in decided)


async def test_fleiss_kappa_matches_statsmodels_for_any_number_of_reviewers(
    tmp_path: Path,
) -> None:
    rng = random.Random(3)
    for attempt in range(6):
        reviewers = [f"r{k}" for k in range(rng.randint(3, 6))]
        votes = {name: [rng.random() < 0.6 for _ in range(COUNT)] for name in reviewers}
        async with RunStore(tmp_path / f"runs{attempt}.sqlite") as store:
            run_id = await store.save(make_report(), "bot")
            for name, verdicts in votes.items():
                for i, passed in enumerate(verdicts):
                    await store.add_label(
                        run_id,
                        sample=f"s{i:02d}",
                        strategy="judge",
                        reviewer=name,
                        verdict="pass" if passed else "fail",
                    )
            agreement = (await store.calibrate(run_id, strategy="judge")).agreement
        passes = [sum(votes[name][i] for name in reviewers) for i in range(COUNT)]
        counts = numpy.array([[n, len(reviewers) - n] for n in passes])
        assert agreement is not None and agreement.fleiss is not None
        assert agreement.fleiss == pytest.approx(inter_rater.fleiss_kappa(counts), abs=1e-12)


async def test_fleiss_kappa_is_not_told_when_every_label_is_the_same(
    tmp_path: Path,
) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(make_report(), "bot")
        passes = [True] * COUNT
        await label_all(store, run_id, {"ann": passes, "bob": passes, "cy": passes})
        agreement = (await store.calibrate(run_id, strategy="judge")).agreement
    assert agreement is not None and agreement.fleiss is None


async def test_sample_file_labels_are_a_separate_source(tmp_path: Path) -> None:
    report = make_report()
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report, "bot")
        await label_all(store, run_id, {"ann": ANN})
        calibration = await store.calibrate(run_id, strategy="judge")
    assert calibration.sample_file == report.calibration["judge"]
    assert calibration.sample_file.rows == len(range(0, COUNT, 3))
    assert calibration.review.rows == COUNT


async def test_stale_labels_are_left_out(tmp_path: Path) -> None:
    changed = [f"answer {i}" if i >= 10 else f"new answer {i}" for i in range(COUNT)]
    async with RunStore(tmp_path / "runs.sqlite") as store:
        first = await store.save(make_report(), "bot")
        await label_all(store, first, {"ann": ANN})
        second = await store.save(make_report(changed), "bot")
        calibration = await store.calibrate(second, strategy="judge")
        report = await store.load(second)
        labels = await store.labels(second)
    assert calibration.stale == 10
    assert calibration.review.rows == COUNT - 10
    assert calibrate_labels(report, labels, strategy="judge") == calibration


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"reviewer": "zed"},
            "no current review label by 'zed' in this run (reviewers with some: ann",
        ),
        ({"strategy": "exact"}, "the strategy 'exact' has no current review label"),
    ],
)
async def test_what_cannot_be_calibrated_is_a_clear_error(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(make_report(), "bot")
        with pytest.raises(ValueError, match="no current review label in this run"):
            await store.calibrate(run_id)
        await label_all(store, run_id, {"ann": ANN[:3]})
        with pytest.raises(ValueError) as caught:
            await store.calibrate(run_id, **options)
    assert message in str(caught.value)


async def test_several_labelled_strategies_need_a_name(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(make_report(), "bot")
        for strategy in ("judge", "exact"):
            await store.add_label(
                run_id, sample="s00", strategy=strategy, reviewer="ann", verdict="pass"
            )
        with pytest.raises(ValueError, match="several strategies have labelled rows"):
            await store.calibrate(run_id)
        exact = await store.calibrate(run_id, strategy="exact")
    assert exact.review.rows == 1
