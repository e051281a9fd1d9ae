"""Fluent assertions on an evaluation report: ``assert_that(report).has_score_greater_than(70)``.

The fifteen assertions and their messages are upstream's (Quarkus LangChain4j
``EvaluationReportAssert``) in snake_case. As upstream, "failed" means every row that did
not pass: failed, unscored and error rows alike.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from .._display import display_value
from .._util._numbers import format_percent, truncate
from ..trace import Trace, assert_trace
from ..trace._assertions import TraceAssert
from ..trace._capture import Capture
from ._judging import calibrate
from ._report import EvaluationReport
from ._results import EvaluationRow
from ._values import TagStatistics

if TYPE_CHECKING:
    from .._compare import Comparison, ComparisonAssert

__all__ = ["ReportAssert", "assert_that"]

_SCORE_TOLERANCE = 0.01
_SCORE_RELATIONS: dict[str, Callable[[float, float], bool]] = {
    "greater than": operator.gt,
    "greater than or equal to": operator.ge,
    "less than": operator.lt,
}
_RELATIONS: dict[str, Callable[[int, int], bool]] = {
    "": operator.eq,
    "at least ": operator.ge,
    "at most ": operator.le,
}


@overload
def assert_that(report: EvaluationReport | None) -> ReportAssert: ...


@overload
def assert_that(report: Comparison) -> ComparisonAssert: ...


@overload
def assert_that(report: Trace | Capture) -> TraceAssert: ...


def assert_that(
    report: EvaluationReport | Comparison | Trace | Capture | None,
) -> ReportAssert | ComparisonAssert | TraceAssert:
    """Start a chain of assertions on a report, a comparison of two runs, or a trace.

    Example::

        assert_that(report).has_score_greater_than(70).has_at_most_failed_evaluations(2)
        assert_that(comparison).has_no_significant_regression(margin=2)
        with aeval.trace.capture() as trace:
            answer = agent("What is the weather in Mysore?")
        assert_that(trace).called("get_weather").called_with("get_weather", city="Mysore")

    Raises:
        AssertionError: ``report`` is ``None``.
        TypeError: ``report`` is neither an :class:`~aeval.EvaluationReport`, an
            :class:`~aeval.Comparison`, nor an :class:`aeval.trace.Trace` (or the capture of
            :func:`aeval.trace.capture`).
    """
    if report is None:
        raise AssertionError("Expected report to not be null")
    if isinstance(report, EvaluationReport):
        return ReportAssert(report)
    if isinstance(report, Trace | Capture):
        return assert_trace(report)
    from .._compare import Comparison, ComparisonAssert

    if isinstance(report, Comparison):
        return ComparisonAssert(report)
    raise TypeError(
        "assert_that() takes an EvaluationReport, a Comparison or a trace (aeval.trace.Trace "
        f"or aeval.trace.capture()), got {type(report).__name__}"
    )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ReportAssert:
    """Assertions on one report; each returns ``self`` so they chain.

    Scores and thresholds are percentages (0-100). A failure raises ``AssertionError``; where
    upstream does, the message ends with the failed rows, each with its expected and actual
    output, score and reason.

    Attributes:
        report: The report under test.
    """

    report: EvaluationReport

    def __repr__(self) -> str:
        return f"ReportAssert({self.report!r})"

    # -- global score --------------------------------------------------------------------------

    def has_score_greater_than(self, threshold: float) -> ReportAssert:
        """The score is strictly greater than ``threshold``."""
        return self._score_is("greater than", threshold, with_failures=True)

    def has_score_greater_than_or_equal_to(self, threshold: float) -> ReportAssert:
        """The score is at least ``threshold``."""
        return self._score_is("greater than or equal to", threshold, with_failures=True)

    def has_score_less_than(self, threshold: float) -> ReportAssert:
        """The score is strictly less than ``threshold``."""
        return self._score_is("less than", threshold)

    def _score_is(
        self, relation: str, threshold: float, *, with_failures: bool = False
    ) -> ReportAssert:
        score = self.report.score
        if not _SCORE_RELATIONS[relation](score, threshold):
            self._fail(
                f"Expected evaluation score to be {relation} "
                f"{format_percent(threshold)} but was {format_percent(score)}",
                with_failures=with_failures,
            )
        return self

    def has_score_between(self, minimum: float, maximum: float) -> ReportAssert:
        """The score lies in ``[minimum, maximum]`` (both inclusive).

        Raises:
            ValueError: ``minimum`` is greater than ``maximum``.
        """
        if minimum > maximum:
            raise ValueError(
                f"has_score_between() needs minimum <= maximum, got {minimum} and {maximum}"
            )
        score = self.report.score
        if not minimum <= score <= maximum:
            self._fail(
                f"Expected evaluation score to be between {format_percent(minimum)} and "
                f"{format_percent(maximum)} but was {format_percent(score)}",
                with_failures=True,
            )
        return self

    def has_score(self, expected: float) -> ReportAssert:
        """The score equals ``expected`` within ±0.01 percentage points."""
        score = self.report.score
        if abs(score - expected) > _SCORE_TOLERANCE:
            self._fail(
                f"Expected evaluation score to be {format_percent(expected)} "
                f"but was {format_percent(score)}"
            )
        return self

    # -- pass / fail ---------------------------------------------------------------------------

    def has_all_passed(self) -> ReportAssert:
        """Every row passed (true of an empty report); not-applicable rows neither pass nor
        fail, so they are allowed."""
        report = self.report
        failed = report.not_passed_count
        if failed:
            raise AssertionError(
                f"Expected all evaluations to pass, but {failed} out of "
                f"{report.evaluation_count} failed:\n{self._failures()}"
            )
        return self

    def has_some_passed(self) -> ReportAssert:
        """At least one row passed (never true of an empty report)."""
        report = self.report
        if report.passed_count == 0:
            raise AssertionError(
                "Expected at least one evaluation to pass, but all "
                f"{report.evaluation_count} evaluations failed:\n{self._failures()}"
            )
        return self

    # -- tags ------------------------------------------------------------------------------------

    def has_passed_for_tag(self, tag: str) -> ReportAssert:
        """Some rows carry ``tag`` and all of them passed (not-applicable rows aside)."""
        stats = self._tag_statistics(tag)
        failed = stats.total - stats.passed - stats.not_applicable
        if failed:
            raise AssertionError(
                f"Expected all evaluations with tag '{tag}' to pass, but {failed} out of "
                f"{stats.total} failed:\n{self._failures(tag)}"
            )
        return self

    def has_score_for_tag(self, tag: str, minimum: float) -> ReportAssert:
        """Some rows carry ``tag`` and their score is at least ``minimum``."""
        stats = self._tag_statistics(tag)
        if stats.score < minimum:
            self._fail(
                f"Expected score for tag '{tag}' to be >= {format_percent(minimum)} "
                f"but was {format_percent(stats.score)}",
                with_failures=True,
                tag=tag,
            )
        return self

    # -- counts ----------------------------------------------------------------------------------

    def has_evaluation_count(self, expected: int) -> ReportAssert:
        """Exactly ``expected`` rows."""
        return self._count(self.report.evaluation_count, "", expected, "evaluations")

    def has_at_least_evaluations(self, minimum: int) -> ReportAssert:
        """At least ``minimum`` rows."""
        return self._count(self.report.evaluation_count, "at least ", minimum, "evaluations")

    def has_passed_count(self, expected: int) -> ReportAssert:
        """Exactly ``expected`` passed rows."""
        return self._count(self.report.passed_count, "", expected, "passed evaluations")

    def has_at_least_passed_evaluations(self, minimum: int) -> ReportAssert:
        """At least ``minimum`` passed rows."""
        return self._count(self.report.passed_count, "at least ", minimum, "passed evaluations")

    def has_failed_count(self, expected: int) -> ReportAssert:
        """Exactly ``expected`` rows that did not pass (failed, unscored or error)."""
        failed = self.report.not_passed_count
        return self._count(failed, "", expected, "failed evaluations", with_failures=True)

    def has_at_most_failed_evaluations(self, maximum: int) -> ReportAssert:
        """At most ``maximum`` rows that did not pass (failed, unscored or error)."""
        failed = self.report.not_passed_count
        return self._count(failed, "at most ", maximum, "failed evaluations", with_failures=True)

    def _count(
        self, count: int, relation: str, bound: int, what: str, *, with_failures: bool = False
    ) -> ReportAssert:
        """Check ``count`` of ``what`` against ``bound``: equal to it (``relation`` empty),
        ``"at least "`` or ``"at most "`` it."""
        if not _RELATIONS[relation](count, bound):
            self._fail(
                f"Expected {relation}{bound} {what} but found {count}", with_failures=with_failures
            )
        return self

    # -- helpers ---------------------------------------------------------------------------------

    # -- trust in the judge ----------------------------------------------------------------------

    def has_kappa_at_least(self, minimum: float, *, strategy: str | None = None) -> ReportAssert:
        """The strategy's verdicts agree with the samples' human labels at Cohen's kappa of
        at least ``minimum`` (see :func:`aeval.calibrate`).

        Args:
            minimum: The least kappa, between -1 and 1 (0.6 is "substantial" agreement).
            strategy: The strategy's name; may be left out when one strategy has labelled
                rows.
        """
        try:
            calibration = calibrate(self.report, strategy)
        except ValueError as exc:
            raise AssertionError(f"Expected a judge calibration, but {exc}") from None
        kappa = calibration.kappa
        if kappa is None or kappa < minimum:
            shown = ", ".join(d.sample for d in calibration.disagreements[:10])
            more = len(calibration.disagreements) - 10
            self._fail(
                f"Expected kappa of {calibration.strategy} against the human labels to be at "
                f"least {minimum:.2f} but was {calibration.describe()}"
                + (f"\n\nDisagreements: {shown}" if shown else "")
                + (f" and {more} more" if more > 0 else "")
            )
        return self

    def _tag_statistics(self, tag: str) -> TagStatistics:
        stats = self.report.tag_statistics.get(tag)
        if stats is None or stats.total == 0:
            raise AssertionError(f"No evaluations found with tag '{tag}'")
        return stats

    def _fail(self, message: str, *, with_failures: bool = False, tag: str | None = None) -> None:
        if with_failures:
            message = f"{message}\n\nFailed evaluations:\n{self._failures(tag)}"
        raise AssertionError(message)

    def _failures(self, tag: str | None = None) -> str:
        report = self.report
        rows: Sequence[EvaluationRow] = report.failures
        if tag is None:
            expected = report.not_passed_count
        else:
            rows = [row for row in rows if tag in row.tags]
            stats = report.tag_statistics[tag]
            expected = stats.total - stats.passed
        entries = [_entry(row) for row in rows]
        missing = expected - len(entries)
        if missing > 0 and not report.holds_all_rows:
            entries.append(
                f"  ({missing} more failed evaluation{'s' if missing != 1 else ''} not "
                "listed: the report does not hold every row)"
            )
        return "\n".join(entries)


def _entry(row: EvaluationRow) -> str:
    header = f"  - {row.name} [{row.strategy}]:" if row.strategy is not None else f"  - {row.name}:"
    score = "unscored" if row.score is None else format_percent(row.score * 100)
    lines = [
        header,
        f"      expected = [{truncate(display_value(row.expected_output), 100)}]",
        f"      actual   = [{truncate(display_value(row.output), 100)}]",
        f"      score    = {score}",
    ]
    error = str(row.error) if row.error is not None else None
    if row.explanation and row.explanation != error:
        lines.append(f"      reason   = {truncate(row.explanation, 200)}")
    if error is not None:
        lines.append(f"      error    = {truncate(error, 200)}")
    return "\n".join(lines)
