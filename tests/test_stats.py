"""The statistics behind every score: the clustered interval, the repeat estimators and a
judge's Cohen's kappa, on hand-computed data and cross-checked against statsmodels on random
data."""

from __future__ import annotations

import math
import random
from math import comb
from typing import Any

import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Samples,
    Scorer,
    merge_reports,
)
from aeval._util._stats import (
    ClusteredMean,
    MomentsCounter,
    cohen_kappa,
    normal_quantile,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

pytestmark = pytest.mark.anyio

Z95 = 1.959963984540054


def row(
    sample: str, index: int, strategy: str, passed: bool, *, repeat: int = 0, **kw: object
) -> EvaluationRow:
    position = int(strategy[1:]) if strategy[1:].isdigit() else 0
    return EvaluationRow.from_result(
        EvaluationSample(sample, ["q"], "a", tags=kw.get("tags", ())),  # type: ignore[arg-type]
        strategy,
        "a",
        EvaluationResult.from_boolean(passed),
        index=index,
        repeat=repeat,
        position=position,
    )


def test_the_clustered_interval_on_hand_computed_data() -> None:
    # four times three samples with two strategies: (1, 1), (1, 0), (0, 0) → mean 0.5
    pattern = [(True, True), (True, False), (False, False)]
    rows = [
        row(f"S{i}", i, strategy, pattern[i % 3][s])
        for i in range(12)
        for s, strategy in enumerate(("s0", "s1"))
    ]
    report = EvaluationReport(rows)
    # cluster deviations 1, 0, -1 four times: SE = sqrt(12/11) * sqrt(8) / 24
    se = math.sqrt(12 / 11) * math.sqrt(8) / 24
    assert report.standard_error == pytest.approx(100 * se)
    # design effect SE² / (p(1-p)/n) = (12/11 · 8/576) / (0.25/24) = 16/11: 24 rows are
    # worth 16.5, and the interval is Wilson's over 16.5 trials at p = 0.5
    effective = 24 / (16 / 11)
    assert report.moments.effective_rows == pytest.approx(effective)
    half = Z95 * math.sqrt(0.25 / effective + Z95**2 / (4 * effective**2))
    half /= 1 + Z95**2 / effective
    low, high = report.confidence_interval()
    assert (low, high) == pytest.approx((50 - 100 * half, 50 + 100 * half))
    assert (low, high) == pytest.approx((28.27, 71.73), abs=0.01)
    # the same rows as independent samples would claim a narrower interval
    independent = EvaluationReport([row(f"R{i}", i, "s0", r.passed) for i, r in enumerate(rows)])
    assert independent.standard_error == pytest.approx(100 * math.sqrt(24 / 23 * 6) / 24)
    assert independent.standard_error is not None and report.standard_error is not None
    assert independent.standard_error < report.standard_error


def test_fewer_than_two_samples_know_nothing_of_the_spread() -> None:
    report = EvaluationReport([row("A", 0, "s0", True), row("A", 0, "s1", False)])
    assert report.standard_error is None
    assert report.confidence_interval() == (0.0, 100.0)
    assert EvaluationReport().confidence_interval() == (0.0, 100.0)


def test_the_interval_stays_within_bounds_and_its_level_is_checked() -> None:
    report = EvaluationReport([row(f"S{i}", i, "s0", i != 0) for i in range(4)])
    low, high = report.confidence_interval(0.99)
    assert 0.0 < low < 75.0 < high < 100.0
    everything = EvaluationReport([row(f"S{i}", i, "s0", True) for i in range(4)])
    low, high = everything.confidence_interval(0.99)
    assert high == 100.0 and 0.0 < low < 100.0
    assert normal_quantile(0.95) == pytest.approx(Z95)
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="between 0 and 1"):
            report.confidence_interval(bad)
    with pytest.raises(TypeError):
        report.confidence_interval("95%")  # type: ignore[arg-type]


def test_tags_and_strategies_have_their_own_clustered_intervals() -> None:
    rows = [
        row("A", 0, "s0", True, tags=("x",)),
        row("A", 0, "s1", False, tags=("x",)),
        row("B", 1, "s0", True, tags=("x",)),
        row("B", 1, "s1", True, tags=("x",)),
        row("C", 2, "s0", False),
        row("C", 2, "s1", False),
    ]
    report = EvaluationReport(rows)
    tag = report.tag_statistics["x"]
    assert tag.samples == 2
    # x: A (0.25 - 0.75 = -0.5), B (0.5) → SE = sqrt(2) * sqrt(0.5) / 4 = 0.25
    assert tag.moments.standard_error == pytest.approx(0.25)
    s1 = report.strategy_statistics["s1"]
    # s1: 1 of 3, one row per sample → SE = sqrt(3/2 * (4/9 + 1/9 + 1/9)... ) / 3
    expected = math.sqrt(1.5 * ((2 / 3) ** 2 + (1 / 3) ** 2 + (1 / 3) ** 2)) / 3
    assert s1.moments.standard_error == pytest.approx(expected)
    # one row per sample: Wilson's interval of 1 of 3
    low, high = wilson_interval(1, 3)
    assert s1.confidence_interval() == pytest.approx((100 * low, 100 * high))


def _statsmodels_wilson(count: int, trials: int, confidence: float) -> tuple[float, float]:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    low, high = proportion.proportion_confint(count, trials, alpha=1 - confidence, method="wilson")
    return (float(low), float(high))


@pytest.mark.parametrize(
    ("count", "trials", "confidence"),
    [(0, 2, 0.95), (2, 2, 0.95), (1, 1, 0.95), (32, 40, 0.95), (0, 50, 0.99), (7, 9, 0.9)]
    + [(c, n, 0.95) for n, c in ((n, random.Random(n).randint(0, n)) for n in range(3, 200, 7))],
)
def test_wilson_matches_statsmodels(count: int, trials: int, confidence: float) -> None:
    assert wilson_interval(count, trials, confidence) == pytest.approx(
        _statsmodels_wilson(count, trials, confidence), abs=1e-12
    )


def test_the_interval_keeps_a_width_at_0_and_100_percent() -> None:
    # the normal interval collapsed here to 100.00 ± 0.00 on 2 samples
    everything = EvaluationReport([row("A", 0, "s0", True), row("B", 1, "s0", True)])
    assert everything.standard_error == 0.0
    low, high = everything.confidence_interval()
    assert (low, high) == pytest.approx(tuple(100 * x for x in wilson_interval(2, 2)))
    assert (round(low, 2), high) == (34.24, 100.0)
    nothing = EvaluationReport([row("A", 0, "s0", False), row("B", 1, "s0", False)])
    assert nothing.confidence_interval() == pytest.approx((0.0, 100 - low))
    # 2 samples of 3 rows each that all pass know as little as 2 samples, not 6 rows
    clustered = EvaluationReport(
        [row(name, i, f"s{s}", True) for i, name in enumerate("AB") for s in range(3)]
    )
    assert clustered.moments.effective_rows == pytest.approx(2.0)
    assert clustered.confidence_interval() == pytest.approx((low, high))
    # the tags and strategies too
    assert everything.strategy_statistics["s0"].confidence_interval() == pytest.approx((low, high))


@pytest.mark.parametrize("seed", range(20))
def test_the_clustered_interval_is_at_least_the_wilson_interval_of_the_rows(seed: int) -> None:
    rng = random.Random(seed)
    rows = []
    chance = rng.choice([0.0, 0.3, 0.9, 1.0])
    for index in range(rng.randint(2, 15)):
        bias = rng.random() < 0.5
        for strategy in range(rng.randint(1, 4)):
            passed = rng.random() < (chance if bias else 1 - chance)
            rows.append(row(f"S{index}", index, f"s{strategy}", passed))
    report = EvaluationReport(rows)
    low, high = report.confidence_interval()
    wilson_low, wilson_high = wilson_interval(report.passed_count, report.evaluation_count)
    assert low <= 100 * wilson_low + 1e-9
    assert high >= 100 * wilson_high - 1e-9
    assert low < high


def _statsmodels_se(values: list[float], clusters: list[int]) -> float:
    sm = pytest.importorskip("statsmodels.api")
    import numpy as np

    ones = np.ones((len(values), 1))
    fitted = sm.OLS(np.asarray(values), ones).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(clusters), "use_correction": True}
    )
    return float(fitted.bse[0])


@pytest.mark.parametrize("seed", range(5))
def test_the_standard_error_matches_statsmodels_cluster_robust_on_random_data(seed: int) -> None:
    rng = random.Random(seed)
    rows, values, clusters = [], [], []
    for index in range(rng.randint(5, 40)):
        for repeat in range(rng.randint(1, 3)):
            for strategy in range(rng.randint(1, 4)):
                passed = rng.random() < 0.6
                rows.append(row(f"S{index}", index, f"s{strategy}", passed, repeat=repeat))
                values.append(float(passed))
                clusters.append(index)
    report = EvaluationReport(rows)
    # statsmodels' CR1 factor is C/(C-1) * (n-1)/(n-k); with one regressor (k=1) it is ours
    assert report.standard_error == pytest.approx(100 * _statsmodels_se(values, clusters))


async def test_a_streamed_run_closes_samples_as_it_goes_and_gives_the_same_interval() -> None:
    samples = Samples(EvaluationSample(f"s{i}", [str(i)], str(i % 3)) for i in range(30))

    async def echo(question: str) -> str:
        return question

    def equal(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(output == sample.expected_output)

    def long(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(len(str(output)) > 1)

    async with Scorer(concurrency=4, repeats=2, keep="none") as scorer:
        async with scorer.stream(samples, echo, equal, long) as rows:
            seen = [r async for r in rows]
            live = rows._run.aggregator  # the run's own aggregator
        report = rows.report
    assert not live._open and not live._pairs  # every sample closed once its rows arrived
    assert report.confidence_interval() == EvaluationReport(seen).confidence_interval()


def test_merged_shards_give_the_same_report_as_one_run() -> None:
    rows = [
        row(f"S{i}", i, f"s{i % 2}", i % 3 != 0, tags=("t",) if i % 4 else ()) for i in range(12)
    ]
    single = EvaluationReport(rows)
    left = EvaluationReport([item for item in rows if item.index < 6])
    merged = merge_reports(left, EvaluationReport([item for item in rows if item.index >= 6]))
    assert merged.confidence_interval() == pytest.approx(single.confidence_interval())
    assert merged.tag_statistics["t"].moments == single.tag_statistics["t"].moments
    for name in ("s0", "s1"):
        assert merged.strategy_statistics[name].confidence_interval() == pytest.approx(
            single.strategy_statistics[name].confidence_interval()
        )


def test_moments_of_closed_clusters_add_up() -> None:
    counter = MomentsCounter()
    counter.add_cluster(2, 1.0)
    counter.add_cluster(3, 3.0)
    assert counter.freeze() == ClusteredMean(
        rows=5, total=4.0, clusters=2, cluster_sq=10.0, cluster_cross=11.0, cluster_size_sq=13.0
    )


@pytest.mark.parametrize(("n", "c"), [(5, 0), (5, 2), (5, 5), (3, 1), (10, 7)])
def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators(n: int, c: int) -> None:
    for k in range(1, n + 1):
        assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))
        assert pass_hat_k(n, c, k) == pytest.approx(comb(c, k) / comb(n, k))
    assert pass_at_k(n, c, 1) == pytest.approx(c / n) == pass_hat_k(n, c, 1)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(n, c, n + 1)


def test_repeats_give_flaky_pairs_pass_at_k_and_agreement() -> None:
    def repeated(
        sample: str, index: int, passes: list[bool], outputs: list[str]
    ) -> list[EvaluationRow]:
        return [
            EvaluationRow.from_result(
                EvaluationSample(sample, ["q"], "a"),
                "judge",
                output,
                EvaluationResult.from_boolean(ok),
                index=index,
                repeat=r,
            )
            for r, (ok, output) in enumerate(zip(passes, outputs, strict=True))
        ]

    rows = repeated("A", 0, [True, False, True], ["Paris", " paris ", "Lyon"]) + repeated(
        "B", 1, [True, True, True], ["x", "x", "x"]
    )
    stats = EvaluationReport(rows).repeat_statistics
    assert stats is not None
    assert (stats.repeats, stats.pairs) == (3, 2)
    assert [(f.sample, f.passed, f.runs) for f in stats.flaky] == [("A", 2, 3)]
    # pass@2: A 1 - C(1,2)/C(3,2) = 1, B 1 → 1; pass^2: A C(2,2)/C(3,2) = 1/3, B 1 → 2/3
    assert stats.pass_at_k == pytest.approx({1: 5 / 6, 2: 1.0, 3: 1.0})
    assert stats.pass_hat_k == pytest.approx({1: 5 / 6, 2: 2 / 3, 3: 0.5})
    # A: "Paris" and " paris " agree after normalisation, "Lyon" does not → 2/3; B → 1
    assert stats.output_agreement == pytest.approx((2 / 3 + 1) / 2)
    [(name, agreement)] = stats.inconsistent
    assert name == "A"
    assert agreement == pytest.approx(2 / 3)


# --- kappa, cross-checked ---------------------------------------------------------------


def cohens_kappa(table: Any) -> Any:
    """statsmodels' Cohen's kappa of a table (its results: kappa, std_kappa, kappa_low…)."""
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    numpy = pytest.importorskip("numpy")
    return inter_rater.cohens_kappa(numpy.array(table))


def _tables() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    rng = random.Random(12)
    fixed = [((4, 1), (2, 3)), ((20, 5), (10, 15)), ((1, 0), (0, 1)), ((0, 4), (5, 0))]
    drawn = [
        ((rng.randint(0, 40), rng.randint(0, 40)), (rng.randint(0, 40), rng.randint(0, 40)))
        for _ in range(100)
    ]
    return fixed + [t for t in drawn if cohen_kappa(t) is not None]


@pytest.mark.parametrize("table", _tables())
def test_kappa_and_its_interval_match_statsmodels(
    table: tuple[tuple[int, int], tuple[int, int]],
) -> None:
    mine = cohen_kappa(table)
    theirs = cohens_kappa(table)
    assert mine is not None
    assert mine.kappa == pytest.approx(theirs.kappa, abs=1e-12)
    assert mine.standard_error == pytest.approx(theirs.std_kappa, abs=1e-12)
    low, high = mine.interval(0.95)
    if mine.standard_error == 0.0:
        # perfect (dis)agreement: statsmodels' interval is the point kappa, ours keeps a width
        assert (theirs.kappa_low, theirs.kappa_upp) == (mine.kappa, mine.kappa)
        assert low < high
        return
    assert low == pytest.approx(max(-1.0, theirs.kappa_low), abs=1e-9)
    assert high == pytest.approx(min(1.0, theirs.kappa_upp), abs=1e-9)


def test_perfect_agreement_keeps_an_interval() -> None:
    # 8 pass and 2 fail labels, every verdict right: kappa 1 with a standard error of 0 read
    # [1.00, 1.00]; Wilson's interval of 10 agreements of 10 is [0.7225, 1], and kappa's is
    # that mapped with chance agreement pe = 0.8² + 0.2² = 0.68 held fixed
    stats = cohen_kappa(((8, 0), (0, 2)))
    assert stats is not None
    assert (stats.kappa, stats.standard_error, stats.rows) == (1.0, 0.0, 10)
    low, high = stats.interval()
    assert high == 1.0
    assert low == pytest.approx((10 / (10 + Z95**2) - 0.68) / 0.32)
    assert low == pytest.approx(0.1327, abs=1e-4)


def test_kappa_is_undefined_when_everything_agrees_on_one_category() -> None:
    assert cohen_kappa(((5, 0), (0, 0))) is None
    assert cohen_kappa(((0, 0), (0, 0))) is None


@pytest.mark.parametrize("table", [((3, 0), (2, 0)), ((0, 3), (0, 2)), ((3, 2), (0, 0))])
def test_kappa_is_undefined_when_one_rater_never_varies(
    table: tuple[tuple[int, int], tuple[int, int]],
) -> None:
    # kappa would be 0 with a standard error of 0: [0.00, 0.00], which reads as certainty
    # while chance alone explains every agreement (statsmodels divides by zero here)
    assert cohen_kappa(table) is None
