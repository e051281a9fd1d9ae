from __future__ import annotations

from typing import Any

import pytest
from _replay import replayed

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    assert_that,
)


def row(
    name: str,
    index: int,
    result: EvaluationResult,
    *,
    output: Any = "out",
    expected: Any = "exp",
    tags: tuple[str, ...] = (),
    strategy: str = "ExactMatch",
) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], expected, tags=tags)
    return EvaluationRow.from_result(sample, strategy, output, result, index=index)


def ok(name: str, index: int, **kw: Any) -> EvaluationRow:
    return row(name, index, EvaluationResult.passing(), **kw)


def ko(
    name: str, index: int, why: str | None = None, score: float = 0.0, **kw: Any
) -> EvaluationRow:
    return row(name, index, EvaluationResult.failing(score, why), **kw)


S2_ENTRY = (
    "  - S2 [ExactMatch]:\n"
    "      expected = [exp]\n"
    "      actual   = [out]\n"
    "      score    = 0.00%\n"
    "      reason   = Too different"
)


@pytest.fixture
def half() -> EvaluationReport:
    """Two rows, one passed: score 50.0."""
    return EvaluationReport([ok("S1", 0), ko("S2", 1, "Too different")])


@pytest.fixture
def tagged() -> EvaluationReport:
    return EvaluationReport(
        [
            ok("S1", 0, tags=("smoke", "core")),
            ko("S2", 1, "Too different", tags=("core",)),
            ok("S3", 2, tags=("smoke",)),
        ]
    )


def fails(call: Any) -> str:
    with pytest.raises(AssertionError) as info:
        call()
    return str(info.value)


def test_assert_that_none_and_wrong_type() -> None:
    assert fails(lambda: assert_that(None)) == "Expected report to not be null"
    with pytest.raises(
        TypeError,
        match=r"assert_that\(\) takes an EvaluationReport, a Comparison or a trace .*got list",
    ):
        assert_that([])  # type: ignore[call-overload]


def test_chaining_returns_the_same_object(half: EvaluationReport) -> None:
    asserting = assert_that(half)
    assert asserting.report is half
    chained = (
        asserting.has_score_greater_than(49.99)
        .has_score_greater_than_or_equal_to(50)
        .has_score_less_than(50.01)
        .has_score_between(50, 50)
        .has_score(50.01)
        .has_some_passed()
        .has_evaluation_count(2)
        .has_at_least_evaluations(2)
        .has_passed_count(1)
        .has_at_least_passed_evaluations(1)
        .has_failed_count(1)
        .has_at_most_failed_evaluations(1)
    )
    assert chained is asserting


def test_has_score_greater_than(half: EvaluationReport) -> None:
    assert_that(EvaluationReport([ok("A", 0)])).has_score_greater_than(85)
    assert fails(lambda: assert_that(half).has_score_greater_than(50)) == (
        "Expected evaluation score to be greater than 50.00% but was 50.00%"
        "\n\nFailed evaluations:\n" + S2_ENTRY
    )


def test_has_score_greater_than_at_exact_threshold_85() -> None:
    rows = [ok(f"P{i}", i) for i in range(17)] + [ko("F1", 17), ko("F2", 18), ko("F3", 19)]
    report = EvaluationReport(rows)
    assert report.score == 85.0
    message = fails(lambda: assert_that(report).has_score_greater_than(85))
    assert message.startswith(
        "Expected evaluation score to be greater than 85.00% but was 85.00%\n\n"
        "Failed evaluations:\n  - F1 [ExactMatch]:\n"
    )
    assert message.count("  - F") == 3


def test_has_score_greater_than_or_equal_to(half: EvaluationReport) -> None:
    assert_that(half).has_score_greater_than_or_equal_to(50.0)
    assert fails(lambda: assert_that(half).has_score_greater_than_or_equal_to(50.005)) == (
        "Expected evaluation score to be greater than or equal to 50.01% but was 50.00%"
        "\n\nFailed evaluations:\n" + S2_ENTRY
    )


def test_has_score_less_than(half: EvaluationReport) -> None:
    assert_that(half).has_score_less_than(50.001)
    assert fails(lambda: assert_that(half).has_score_less_than(50)) == (
        "Expected evaluation score to be less than 50.00% but was 50.00%"
    )


def test_has_score_between(half: EvaluationReport) -> None:
    assert_that(half).has_score_between(50, 60).has_score_between(40, 50)
    assert fails(lambda: assert_that(half).has_score_between(60, 70)) == (
        "Expected evaluation score to be between 60.00% and 70.00% but was 50.00%"
        "\n\nFailed evaluations:\n" + S2_ENTRY
    )
    with pytest.raises(ValueError, match="minimum <= maximum, got 70 and 60"):
        assert_that(half).has_score_between(70, 60)


def test_has_score_tolerates_a_hundredth(half: EvaluationReport) -> None:
    assert_that(half).has_score(50.01).has_score(49.99).has_score(50)
    assert fails(lambda: assert_that(half).has_score(50.02)) == (
        "Expected evaluation score to be 50.02% but was 50.00%"
    )


def test_percentages_round_half_up() -> None:
    report = EvaluationReport([ok("P", 0)] + [ko(f"F{i}", i + 1) for i in range(31)])
    message = fails(lambda: assert_that(report).has_score_less_than(2.675))
    assert message == "Expected evaluation score to be less than 2.68% but was 3.13%"


def test_has_all_passed(half: EvaluationReport) -> None:
    assert_that(EvaluationReport([ok("A", 0), ok("B", 1)])).has_all_passed()
    assert_that(EvaluationReport([])).has_all_passed()
    assert fails(lambda: assert_that(half).has_all_passed()) == (
        "Expected all evaluations to pass, but 1 out of 2 failed:\n" + S2_ENTRY
    )


def test_has_some_passed(half: EvaluationReport) -> None:
    assert_that(half).has_some_passed()
    assert fails(lambda: assert_that(EvaluationReport([])).has_some_passed()) == (
        "Expected at least one evaluation to pass, but all 0 evaluations failed:\n"
    )
    none_passed = EvaluationReport([ko("A", 0), ko("B", 1, "nope")])
    assert fails(lambda: assert_that(none_passed).has_some_passed()) == (
        "Expected at least one evaluation to pass, but all 2 evaluations failed:\n"
        "  - A [ExactMatch]:\n"
        "      expected = [exp]\n"
        "      actual   = [out]\n"
        "      score    = 0.00%\n"
        "  - B [ExactMatch]:\n"
        "      expected = [exp]\n"
        "      actual   = [out]\n"
        "      score    = 0.00%\n"
        "      reason   = nope"
    )


def test_has_passed_for_tag(tagged: EvaluationReport) -> None:
    assert_that(tagged).has_passed_for_tag("smoke")
    assert fails(lambda: assert_that(tagged).has_passed_for_tag("core")) == (
        "Expected all evaluations with tag 'core' to pass, but 1 out of 2 failed:\n" + S2_ENTRY
    )
    assert fails(lambda: assert_that(tagged).has_passed_for_tag("Core")) == (
        "No evaluations found with tag 'Core'"
    )


def test_has_score_for_tag(tagged: EvaluationReport) -> None:
    assert_that(tagged).has_score_for_tag("core", 50).has_score_for_tag("smoke", 100)
    assert fails(lambda: assert_that(tagged).has_score_for_tag("core", 50.5)) == (
        "Expected score for tag 'core' to be >= 50.50% but was 50.00%"
        "\n\nFailed evaluations:\n" + S2_ENTRY
    )
    assert fails(lambda: assert_that(tagged).has_score_for_tag("missing", 0)) == (
        "No evaluations found with tag 'missing'"
    )


def test_tag_failures_list_only_tagged_rows() -> None:
    report = EvaluationReport(
        [ko("Untagged", 0), ko("S2", 1, "Too different", tags=("core",)), ok("S3", 2)]
    )
    message = fails(lambda: assert_that(report).has_score_for_tag("core", 10))
    assert message == (
        "Expected score for tag 'core' to be >= 10.00% but was 0.00%"
        "\n\nFailed evaluations:\n" + S2_ENTRY
    )


def test_evaluation_counts(half: EvaluationReport) -> None:
    assert fails(lambda: assert_that(half).has_evaluation_count(3)) == (
        "Expected 3 evaluations but found 2"
    )
    assert fails(lambda: assert_that(half).has_at_least_evaluations(3)) == (
        "Expected at least 3 evaluations but found 2"
    )
    assert_that(half).has_at_least_evaluations(0)


def test_passed_counts(half: EvaluationReport) -> None:
    assert fails(lambda: assert_that(half).has_passed_count(2)) == (
        "Expected 2 passed evaluations but found 1"
    )
    assert fails(lambda: assert_that(half).has_at_least_passed_evaluations(2)) == (
        "Expected at least 2 passed evaluations but found 1"
    )


def test_failed_counts(half: EvaluationReport) -> None:
    assert fails(lambda: assert_that(half).has_failed_count(0)) == (
        "Expected 0 failed evaluations but found 1\n\nFailed evaluations:\n" + S2_ENTRY
    )
    assert fails(lambda: assert_that(half).has_at_most_failed_evaluations(0)) == (
        "Expected at most 0 failed evaluations but found 1\n\nFailed evaluations:\n" + S2_ENTRY
    )
    assert_that(half).has_at_most_failed_evaluations(5)


def test_failed_counts_include_errors_and_unscored() -> None:
    sample = EvaluationSample("Err", ["q"], "e")
    report = EvaluationReport(
        [
            ok("S1", 0),
            row("Judge", 1, EvaluationResult.unscored("reply was not JSON"), strategy="AiJudge"),
            EvaluationRow.from_error(sample, None, None, ErrorInfo("ValueError", "boom"), index=2),
            EvaluationRow.from_error(
                EvaluationSample("StratErr", ["q"], ["a", "b"]),
                "Similarity",
                "x",
                ErrorInfo("RuntimeError", "no embedder"),
                index=3,
            ),
        ]
    )
    assert_that(report).has_failed_count(3).has_passed_count(1)
    assert fails(lambda: assert_that(report).has_all_passed()) == (
        "Expected all evaluations to pass, but 3 out of 4 failed:\n"
        "  - Judge [AiJudge]:\n"
        "      expected = [exp]\n"
        "      actual   = [out]\n"
        "      score    = unscored\n"
        "      reason   = reply was not JSON\n"
        "  - Err:\n"
        "      expected = [e]\n"
        "      actual   = [null]\n"
        "      score    = 0.00%\n"
        "      reason   = Failed to execute sample 'Err': ValueError: boom\n"
        "      error    = ValueError: boom\n"
        "  - StratErr [Similarity]:\n"
        "      expected = [[a, b]]\n"
        "      actual   = [x]\n"
        "      score    = 0.00%\n"
        "      error    = RuntimeError: no embedder"
    )


def test_failure_entries_truncate_long_values() -> None:
    report = EvaluationReport(
        [ko("Long", 0, "r" * 250, expected="e" * 101, output="a" * 100, score=0.02675)]
    )
    assert fails(lambda: assert_that(report).has_all_passed()) == (
        "Expected all evaluations to pass, but 1 out of 1 failed:\n"
        "  - Long [ExactMatch]:\n"
        f"      expected = [{'e' * 97}...]\n"
        f"      actual   = [{'a' * 100}]\n"
        "      score    = 2.68%\n"
        f"      reason   = {'r' * 197}..."
    )


def test_incomplete_report_says_rows_are_missing() -> None:
    report = replayed([ok("A", 0), ko("B", 1), ko("C", 2, tags=("t",))], keep="none")
    assert fails(lambda: assert_that(report).has_all_passed()) == (
        "Expected all evaluations to pass, but 2 out of 3 failed:\n"
        "  (2 more failed evaluations not listed: the report does not hold every row)"
    )
    assert fails(lambda: assert_that(report).has_passed_for_tag("t")) == (
        "Expected all evaluations with tag 't' to pass, but 1 out of 1 failed:\n"
        "  (1 more failed evaluation not listed: the report does not hold every row)"
    )


def test_report_keeping_failures_lists_them_all() -> None:
    report = replayed([ok("S1", 0), ko("S2", 1, "Too different")], keep="failures")
    assert not report.holds_all_rows
    assert fails(lambda: assert_that(report).has_all_passed()) == (
        "Expected all evaluations to pass, but 1 out of 2 failed:\n" + S2_ENTRY
    )
