"""``assert_that(comparison)``: the gates of a comparison as assertions, with clear messages."""

from __future__ import annotations

import pytest
from _compare import binary_run, run

from aeval import Comparison, assert_that


def regressed(margin_case: bool = False) -> Comparison:
    tags = {f"s{i}": ["risky"] if i < 15 else ["safe"] for i in range(30)}
    before = {f"s{i}": {"exact": "P"} for i in range(30)}
    after = {f"s{i}": {"exact": "F" if i < 12 else "P"} for i in range(30)}
    return Comparison.of(
        run(before, tags=tags, outputs=dict.fromkeys(before, "Paris")),
        run(after, tags=tags, outputs={f"s{i}": "Lyon" for i in range(12)}),
    )


def test_assert_that_picks_the_assertions_by_what_it_is_given() -> None:
    comparison = regressed()
    assert assert_that(comparison).comparison is comparison
    assert_that(comparison).is_non_inferior(100)
    report = binary_run([True])
    assert assert_that(report).report is report
    assert_that(report).has_all_passed().has_score(100)
    with pytest.raises(
        TypeError, match=r"takes an EvaluationReport, a Comparison or a trace .*got int"
    ):
        assert_that(3)  # type: ignore[call-overload]


def test_a_significant_regression_fails_with_the_figures_and_the_pairs() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_that(regressed()).has_no_significant_regression(margin=2)
    message = str(caught.value)
    lines = message.splitlines()
    assert lines[0] == (
        "Expected no significant regression beyond 2.00 points, but the candidate is "
        "significantly worse than the baseline:"
    )
    assert lines[1].startswith(
        "  - overall: 100.00% → 60.00%, -40.00 points (95% CI -57.83 to -22.17), p < 0.001 "
        "(exact McNemar test), beyond the margin of 2.00 points"
    )
    assert lines[2].startswith("  - tag risky: 100.00% → 20.00%, -80.00 points")
    assert "Holm-adjusted p < 0.001" in lines[2]
    assert "Regressions (12):" in message
    assert (
        "  - s0 [exact]: passed → failed\n"
        "      expected  = [answer s0]\n"
        "      baseline  = [Paris]\n"
        "      candidate = [Lyon]\n"
        "      reason    = exact said F"
    ) in message


def test_the_margin_lets_small_significant_drops_pass() -> None:
    comparison = regressed()
    assert_that(comparison).has_no_significant_regression(margin=80)
    with pytest.raises(AssertionError, match="tag risky"):
        assert_that(comparison).has_no_significant_regression(margin=40)
    with pytest.raises(ValueError, match="margin is a number of percentage points >= 0"):
        assert_that(comparison).has_no_significant_regression(margin=-1)


def test_no_difference_passes_the_regression_check_but_is_not_better() -> None:
    same = binary_run([True] * 20 + [False] * 20)
    nudged = binary_run([True] * 22 + [False] * 18)
    comparison = Comparison.of(same, nudged)
    chained = assert_that(comparison).has_no_significant_regression()
    assert chained.comparison is comparison
    with pytest.raises(AssertionError) as caught:
        chained.is_significantly_better()
    assert str(caught.value) == (
        "Expected the candidate to be significantly better than the baseline, but the verdict "
        "is 'no significant difference': 50.00% → 55.00%: +5.00 points (95% CI -1.84 to "
        "+11.84), p = 0.500 (exact McNemar test): no significant difference\n"
        "(with 40 samples only a change of 12 points or more can be told from noise; 2 fixes, "
        "0 regressions)"
    )


def test_a_better_candidate_passes_and_non_inferiority_is_checked() -> None:
    comparison = Comparison.of(binary_run([False] * 30), binary_run([True] * 30))
    assert_that(comparison).is_significantly_better().is_non_inferior(0)
    flat = Comparison.of(binary_run([True, False] * 10), binary_run([False, True] * 10))
    with pytest.raises(AssertionError) as caught:
        assert_that(flat).is_non_inferior(5)
    assert str(caught.value).startswith(
        "Expected the candidate to be non-inferior: non-inferiority not shown: the difference "
        "0.00 points has the 95% interval -44.96 to +44.96, whose low end is not above -5.00 "
        "points (with 20 samples"
    )
