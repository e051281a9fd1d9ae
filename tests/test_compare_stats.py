"""The statistics of a comparison: hand-computed cases, then cross-checks on random data
against scipy (binomial test, paired t statistic) and statsmodels (McNemar, cluster-robust
standard error and p-value, Holm)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from _compare import binary_run, run

from aeval import Comparison

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")
sm = pytest.importorskip("statsmodels.api")
multitest = pytest.importorskip("statsmodels.stats.multitest")
tables = pytest.importorskip("statsmodels.stats.contingency_tables")

MCNEMAR = "exact McNemar test"
PAIRED_Z = "paired z-test on per-sample differences"
SIGN_TEST = "sign test on per-sample differences"
Z95 = 1.959963984540054
Z80 = 0.8416212335729143


# -- hand-computed --------------------------------------------------------------------------


def mcnemar_exact(regressions: int, fixes: int, *, concordant: int = 0) -> float:
    """The p-value of a comparison of binary runs with these discordant pairs."""
    before = [True] * regressions + [False] * fixes + [True] * concordant
    after = [False] * regressions + [True] * fixes + [True] * concordant
    comparison = Comparison.of(binary_run(before or [True]), binary_run(after or [True]))
    assert comparison.test == MCNEMAR
    assert comparison.p_value is not None
    return comparison.p_value


def test_exact_mcnemar_by_hand() -> None:
    # 7 discordant pairs, 1 regression: p = 2 * (C(7,0) + C(7,1)) / 2^7 = 16 / 128
    assert mcnemar_exact(1, 6) == 0.125
    assert mcnemar_exact(6, 1) == 0.125
    # 10 discordant, 0 one way: 2 / 1024
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(2, 3) == 1.0  # the doubled tail passes 1: capped


def test_a_binary_comparison_by_hand() -> None:
    # 10 samples, one row each: 3 pass on both, 1 regression, 6 fixes
    before = [True] * 3 + [True] + [False] * 6
    after = [True] * 3 + [False] + [True] * 6
    comparison = Comparison.of(binary_run(before), binary_run(after))
    assert comparison.test == MCNEMAR
    assert comparison.p_value == 0.125
    assert (comparison.baseline_score, comparison.candidate_score) == (40.0, 90.0)
    assert comparison.difference == pytest.approx(50.0)
    # d_i: +1 six times, -1 once, 0 three times; D = 0.5; sum (d - D)^2 = 4.5
    se = math.sqrt(10 / 9) * math.sqrt(4.5) / 10
    assert comparison.standard_error == pytest.approx(100 * se)
    assert comparison.interval == pytest.approx((50 - 100 * Z95 * se, 50 + 100 * Z95 * se))
    # the Wald interval excludes 0, but the exact test, which decides, does not reject
    assert comparison.interval[0] > 0
    assert comparison.verdict == "no significant difference"
    # MDE from the 7 discordant pairs: (z_.975 + z_.80) * sqrt(7) / 10
    assert comparison.minimum_detectable_effect == pytest.approx(
        100 * (Z95 + Z80) * math.sqrt(7) / 10
    )
    assert comparison.power_note == (
        "with 10 samples only a change of 74 points or more can be told from noise"
    )
    assert [pair.sample for pair in comparison.regressions] == ["s3"]
    assert [pair.sample for pair in comparison.fixes] == [f"s{i}" for i in range(4, 10)]


def test_a_paired_comparison_with_two_strategies_by_hand() -> None:
    before = {"A": "PP", "B": "FF", "C": "PF", "D": "PP"}
    after = {"A": "PF", "B": "PP", "C": "PP", "D": "PP"}
    baseline = run({k: {"x": v[0], "y": v[1]} for k, v in before.items()})
    candidate = run({k: {"x": v[0], "y": v[1]} for k, v in after.items()})
    comparison = Comparison.of(baseline, candidate)
    # d = (-0.5, 1, 0.5, 0), D = 0.25, SE = sqrt(4/3) * (1/8) * sqrt(sum 2^2 (d - D)^2)
    se = math.sqrt(4 / 3) / 8 * math.sqrt(4 * 1.25)
    assert se == pytest.approx(math.sqrt(1.25 / 3) / 2), "sd(d) / sqrt(C) with equal clusters"
    assert comparison.test == PAIRED_Z
    assert comparison.difference == pytest.approx(25.0)
    assert comparison.standard_error == pytest.approx(100 * se)
    assert comparison.p_value == pytest.approx(math.erfc(0.25 / se / math.sqrt(2)))
    assert comparison.p_value == pytest.approx(0.4386, abs=1e-4)
    assert (comparison.samples, comparison.pairs) == (4, 8)
    assert comparison.verdict == "no significant difference"
    # per strategy, each sample is one binary pair again: exact McNemar
    x = comparison.for_strategy("x")
    assert (x.test, x.p_value) == (MCNEMAR, 1.0)
    assert x.difference == pytest.approx(25.0)


def test_repeats_make_each_pair_a_share_and_each_sample_a_cluster() -> None:
    baseline = run({"A": {"x": "PPF"}, "B": {"x": "PFF"}, "C": {"x": "FFF"}})
    candidate = run({"A": {"x": "PPP"}, "B": {"x": "PP"}, "C": {"x": "PFF"}})
    comparison = Comparison.of(baseline, candidate)
    # shares 2/3 → 1, 1/3 → 1, 0 → 1/3: d = (1/3, 2/3, 1/3)
    d = [1 / 3, 2 / 3, 1 / 3]
    mean = sum(d) / 3
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (3 * 2))
    assert comparison.test == PAIRED_Z
    assert comparison.difference == pytest.approx(100 * mean)
    assert comparison.standard_error == pytest.approx(100 * se)
    assert comparison.baseline_score == pytest.approx(100 / 3)
    assert [p.sample for p in comparison.fixes] == ["A", "B", "C"]
    assert comparison.fixes[0].verdict_on("baseline") == "2/3 passed"


def test_every_sample_moving_alike_falls_back_to_the_sign_test() -> None:
    baseline = run({f"s{i}": {"x": "P", "y": "F"} for i in range(6)})
    candidate = run({f"s{i}": {"x": "P", "y": "P"} for i in range(6)})
    comparison = Comparison.of(baseline, candidate)
    # every d_i is +0.5: no spread, so z is undefined; 6 of 6 up: p = 2 / 64
    assert comparison.standard_error == 0.0
    assert (comparison.test, comparison.p_value) == (SIGN_TEST, 2 / 64)
    assert comparison.verdict == "better"


def test_every_sample_moving_from_0_to_100_percent_keeps_an_interval() -> None:
    comparison = Comparison.of(binary_run([False] * 10), binary_run([True] * 10))
    assert comparison.difference == 100.0 and comparison.standard_error == 0.0
    # it read +100.00 to +100.00 (certainty); Newcombe's interval from the sides' Wilson
    # intervals (0-27.75 and 72.25-100) keeps a width
    low, high = comparison.interval
    assert high == 100.0
    assert low == pytest.approx(100 - math.hypot(100 - 72.2467, 27.7533), abs=0.01)
    assert comparison.baseline_interval == pytest.approx((0.0, 27.7533), abs=1e-4)
    assert comparison.candidate_interval == pytest.approx((72.2467, 100.0), abs=1e-4)
    two = Comparison.of(binary_run([False] * 2), binary_run([True] * 2))
    assert two.interval[0] < 10.0 and two.verdict == "no significant difference"
    assert "+100.00 to +100.00" not in two.describe()


def test_identical_runs_do_not_claim_to_see_every_change() -> None:
    same = binary_run([True] * 30 + [False] * 10)
    comparison = Comparison.of(same, same)
    assert (comparison.difference, comparison.p_value) == (0.0, 1.0)
    # no sample moved, which 40 samples cannot tell from "fewer than 3.84/43.84 would move":
    # the interval is that bound on both sides, not the point 0.00 to 0.00
    width = 100 * Z95**2 / (40 + Z95**2)
    assert comparison.interval == pytest.approx((-width, width))
    assert comparison.interval == pytest.approx((-8.76, 8.76), abs=0.01)
    # no discordant pair: the rule of three's bound, a spread of 3/n, stands in
    expected = 100 * (Z95 + Z80) * math.sqrt(3) / 40
    assert comparison.minimum_detectable_effect == pytest.approx(expected)
    assert comparison.power_note == (
        "with 40 samples only a change of 12 points or more can be told from noise"
    )


def test_the_power_note_for_forty_samples() -> None:
    # 6 discordant pairs of 40: (z_.975 + z_.8) * sqrt(6) / 40 = 17.2 points
    before = [True] * 30 + [False] * 10
    after = [False] * 3 + [True] * 27 + [True] * 3 + [False] * 7
    comparison = Comparison.of(binary_run(before), binary_run(after))
    assert len(comparison.regressions) + len(comparison.fixes) == 6
    assert comparison.minimum_detectable_effect == pytest.approx(
        100 * (Z95 + Z80) * math.sqrt(6) / 40
    )
    assert comparison.power_note == (
        "with 40 samples only a change of 17 points or more can be told from noise"
    )
    one = Comparison.of(binary_run([True]), binary_run([False]))
    assert one.power_note == "with 1 sample no change can be told from noise"
    assert one.interval == (-100.0, 100.0)


def test_per_tag_p_values_are_holm_adjusted() -> None:
    spec = {f"s{i}": {"x": "P"} for i in range(30)}
    worse = {f"s{i}": {"x": "F" if i < 12 else "P"} for i in range(30)}
    tags = {f"s{i}": ["a"] if i < 15 else ["b"] for i in range(30)}
    comparison = Comparison.of(run(spec, tags=tags), run(worse, tags=tags))
    a, b = comparison.for_tag("a"), comparison.for_tag("b")
    assert (a.p_value, b.p_value) == (mcnemar_exact(12, 0), 1.0)
    assert a.adjusted_p_value == pytest.approx(2 * a.p_value)
    assert b.adjusted_p_value == 1.0
    assert comparison.adjusted_p_value == comparison.p_value
    assert a.verdict == "worse" and b.verdict == "no significant difference"
    assert comparison.tags == ("a", "b")


# -- cross-checks on random data --------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_mcnemar_matches_scipy_binomtest_and_statsmodels(seed: int) -> None:
    rng = random.Random(seed)
    b, c = rng.randint(0, 60), rng.randint(0, 60)
    ours = mcnemar_exact(b, c)
    if b + c:
        assert ours == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12)
    table = [[rng.randint(0, 50), b], [c, rng.randint(0, 50)]]
    assert ours == pytest.approx(tables.mcnemar(table, exact=True).pvalue, rel=1e-12)


@pytest.mark.parametrize(("b", "c"), [(14_000, 14_420), (1, 20_500)])
def test_mcnemar_beyond_the_exact_limit_stays_accurate(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-8)


@pytest.mark.parametrize("seed", range(10))
def test_a_random_binary_comparison_matches_scipy(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(5, 120)
    before = [rng.random() < 0.7 for _ in range(n)]
    after = [ok if rng.random() < 0.8 else not ok for ok in before]
    comparison = Comparison.of(binary_run(before), binary_run(after))
    b = sum(x and not y for x, y in zip(before, after, strict=True))
    c = sum(y and not x for x, y in zip(before, after, strict=True))
    assert comparison.test == MCNEMAR
    expected = stats.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert comparison.p_value == pytest.approx(expected, rel=1e-12)
    d = np.array(after, dtype=float) - np.array(before, dtype=float)
    if d.std() > 0:
        # one pair per sample: SE is the paired t-test's, sd(d) / sqrt(n)
        t = stats.ttest_rel(np.array(after, float), np.array(before, float)).statistic
        assert comparison.standard_error is not None
        assert comparison.difference / comparison.standard_error == pytest.approx(t)


def _random_sides(rng: random.Random) -> tuple[dict[str, dict[str, str]], ...]:
    base: dict[str, dict[str, str]] = {}
    cand: dict[str, dict[str, str]] = {}
    for i in range(rng.randint(6, 60)):
        strategies = [f"s{k}" for k in range(rng.randint(1, 3))]
        skill = rng.random()
        base[f"q{i}"] = {
            s: "".join("P" if rng.random() < skill else "F" for _ in range(rng.randint(1, 3)))
            for s in strategies
        }
        better = min(1.0, skill + rng.uniform(-0.3, 0.4))
        cand[f"q{i}"] = {
            s: "".join("P" if rng.random() < better else "F" for _ in range(rng.randint(1, 3)))
            for s in strategies
        }
    return base, cand


def _deltas(base: dict[str, dict[str, str]], cand: dict[str, dict[str, str]]) -> tuple[Any, Any]:
    values, groups = [], []
    for index, (name, strategies) in enumerate(base.items()):
        for strategy, letters in strategies.items():
            other = cand[name][strategy]
            values.append(other.count("P") / len(other) - letters.count("P") / len(letters))
            groups.append(index)
    return np.array(values), np.array(groups)


@pytest.mark.parametrize("seed", range(15))
def test_the_clustered_paired_test_matches_statsmodels_cluster_robust_ols(seed: int) -> None:
    rng = random.Random(seed)
    base, cand = _random_sides(rng)
    comparison = Comparison.of(run(base), run(cand))
    values, groups = _deltas(base, cand)
    fitted = sm.OLS(values, np.ones((len(values), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": True}, use_t=False
    )
    assert comparison.difference == pytest.approx(100 * fitted.params[0])
    assert comparison.standard_error == pytest.approx(100 * fitted.bse[0])
    if comparison.test == PAIRED_Z:
        assert comparison.p_value == pytest.approx(fitted.pvalues[0], rel=1e-9)
        low, high = fitted.conf_int(alpha=0.05)[0]
        assert comparison.interval == pytest.approx((100 * low, 100 * high))


@pytest.mark.parametrize("seed", range(10))
def test_the_paired_z_statistic_is_scipys_paired_t_statistic(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(8, 80)
    # one strategy, three repeats a side: one pair per sample, shares not 0/1
    base = {f"q{i}": {"x": "".join(rng.choice("PF") for _ in range(3))} for i in range(n)}
    cand = {f"q{i}": {"x": "".join(rng.choice("PPF") for _ in range(3))} for i in range(n)}
    comparison = Comparison.of(run(base), run(cand))
    shares = [(cand[k]["x"].count("P") / 3, base[k]["x"].count("P") / 3) for k in base]
    after, before = np.array(shares).T
    result = stats.ttest_rel(after, before)
    if comparison.test != PAIRED_Z:
        pytest.skip("no spread in this draw")
    assert comparison.standard_error is not None
    z = comparison.difference / comparison.standard_error
    assert z == pytest.approx(result.statistic)
    # the normal tail of that statistic (scipy's t tail is a little wider for small n)
    assert comparison.p_value == pytest.approx(2 * stats.norm.sf(abs(result.statistic)))
    assert comparison.p_value <= result.pvalue + 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_holm_matches_statsmodels(seed: int) -> None:
    """The tags' p-values are adjusted together, as statsmodels' Holm adjusts them."""
    rng = random.Random(seed)
    count = rng.randint(1, 8)
    tags = {f"s{i}": [f"t{i % count}"] for i in range(40 * count)}
    before = {name: {"x": "P" if rng.random() < 0.7 else "F"} for name in tags}
    after = {name: {"x": "P" if rng.random() < 0.5 else "F"} for name in tags}
    comparison = Comparison.of(run(before, tags=tags), run(after, tags=tags))
    per_tag = [comparison.for_tag(tag) for tag in comparison.tags]
    raw = [tag.p_value for tag in per_tag]
    expected = multitest.multipletests(raw, method="holm")[1]
    assert [tag.adjusted_p_value for tag in per_tag] == pytest.approx(list(expected))
