"""The gates of a comparison in CI: no significant regression, or proven non-inferiority."""

from __future__ import annotations

from dataclasses import dataclass

from .._util._numbers import format_number
from ._comparison import Comparison, format_p, signed

__all__ = ["Gate", "non_inferiority_message", "regression_message"]


def regression_message(scope: Comparison, margin: float) -> str:
    """Why ``scope`` is a regression: ``tag smoke: 90.00% → 70.00%, -20.00 points ...``."""
    low, high = scope.interval
    beyond = f", beyond the margin of {format_number(margin)} points" if margin else ""
    adjusted = (
        f", Holm-adjusted {format_p(scope.adjusted_p_value)}"
        if scope.adjusted_p_value != scope.p_value
        else ""
    )
    return (
        f"{scope.scope}: {format_number(scope.baseline_score)}% → "
        f"{format_number(scope.candidate_score)}%, {signed(scope.difference)} points "
        f"({scope.confidence * 100:g}% CI {signed(low)} to {signed(high)}), "
        f"{format_p(scope.p_value)} ({scope.test}{adjusted}){beyond}"
    )


@dataclass(frozen=True, slots=True)
class Gate:
    """What makes ``aeval compare`` (and ``aeval run --baseline``) exit 1.

    Attributes:
        fail_on_regression: Fail when the candidate, overall or on a tag, is significantly
            worse than the baseline by more than ``margin`` points (tags Holm-adjusted).
        margin: The points a significant regression must exceed to fail the gate.
        non_inferiority: Fail unless the low end of the overall difference's interval is
            above minus this many points (the strict form), when set.
    """

    fail_on_regression: bool = False
    margin: float = 0.0
    non_inferiority: float | None = None

    @property
    def active(self) -> bool:
        """Whether any gate is set."""
        return self.fail_on_regression or self.non_inferiority is not None

    def failures(self, comparison: Comparison) -> list[str]:
        """One line per reason to fail; empty when the gates pass (or none is set)."""
        found = []
        if self.fail_on_regression:
            found += [
                f"significant regression on {regression_message(scope, self.margin)}"
                for scope in comparison.significant_regressions(self.margin)
            ]
        limit = self.non_inferiority
        if limit is not None and not comparison.is_non_inferior(limit):
            found.append(non_inferiority_message(comparison, limit))
        return found

    def passes(self, comparison: Comparison) -> list[str]:
        """What each gate checked, when it passes (for the last line)."""
        found = []
        if self.fail_on_regression:
            beyond = f" beyond {format_number(self.margin)} points" if self.margin else ""
            found.append(f"no significant regression{beyond}")
        if self.non_inferiority is not None:
            low = comparison.interval[0]
            found.append(
                f"non-inferior: the interval's low end {signed(low)} is above "
                f"-{format_number(self.non_inferiority)} points"
            )
        return found


def non_inferiority_message(comparison: Comparison, margin: float) -> str:
    """Why ``comparison`` does not show non-inferiority within ``margin`` points."""
    low, high = comparison.interval
    return (
        f"non-inferiority not shown: the difference {signed(comparison.difference)} points has "
        f"the {comparison.confidence * 100:g}% interval {signed(low)} to {signed(high)}, whose "
        f"low end is not above -{format_number(margin)} points ({comparison.power_note})"
    )
