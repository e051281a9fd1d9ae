"""Fluent assertions on a comparison: ``assert_that(comparison).has_no_significant_regression()``.

``aeval.assert_that`` returns a :class:`ComparisonAssert` for a :class:`Comparison`, as it
returns a ``ReportAssert`` for a report. A failure message says what was expected, the
figures that decided (scores, difference with its interval, p-value and test, power), and
lists the pairs that changed, each with its expected output and both runs' outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._display import display_value
from .._util._numbers import format_number, truncate
from ._comparison import ChangedPair, Comparison
from ._gates import non_inferiority_message, regression_message

__all__ = ["ComparisonAssert"]

_PAIRS_LISTED = 20


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ComparisonAssert:
    """Assertions on one comparison; each returns ``self`` so they chain.

    Margins are in percentage points. A failure raises ``AssertionError``.

    Attributes:
        comparison: The comparison under test.
    """

    comparison: Comparison

    def __repr__(self) -> str:
        return f"ComparisonAssert({self.comparison.describe()!r})"

    def has_no_significant_regression(self, margin: float = 0.0) -> ComparisonAssert:
        """Neither overall nor on any tag is the candidate significantly worse by more than
        ``margin`` points (per-tag p-values Holm-adjusted)."""
        _check_margin(margin)
        regressed = self.comparison.significant_regressions(margin)
        if regressed:
            beyond = f" beyond {format_number(margin)} points" if margin else ""
            lines = [
                f"Expected no significant regression{beyond}, but the candidate is "
                "significantly worse than the baseline:",
                *(f"  - {regression_message(scope, margin)}" for scope in regressed),
            ]
            raise AssertionError(_with_pairs(lines, "Regressions", regressed[0].regressions))
        return self

    def is_significantly_better(self) -> ComparisonAssert:
        """The candidate is significantly better than the baseline overall."""
        c = self.comparison
        if c.verdict != "better":
            lines = [
                "Expected the candidate to be significantly better than the baseline, but the "
                f"verdict is '{c.verdict}': {c.describe()}",
                f"({c.power_note}; {len(c.fixes)} fixes, {len(c.regressions)} regressions)",
            ]
            raise AssertionError(_with_pairs(lines, "Regressions", c.regressions))
        return self

    def is_non_inferior(self, margin: float) -> ComparisonAssert:
        """The low end of the overall difference's interval is above ``-margin`` points."""
        _check_margin(margin)
        c = self.comparison
        if not c.is_non_inferior(margin):
            lines = [
                f"Expected the candidate to be non-inferior: {non_inferiority_message(c, margin)}"
            ]
            raise AssertionError(_with_pairs(lines, "Regressions", c.regressions))
        return self


def _check_margin(margin: float) -> None:
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin >= 0:
        raise ValueError(f"margin is a number of percentage points >= 0, got {margin!r}")


def _with_pairs(lines: list[str], title: str, pairs: Sequence[ChangedPair]) -> str:
    if not pairs:
        return "\n".join(lines)
    lines += ["", f"{title} ({len(pairs)}):"]
    for pair in pairs[:_PAIRS_LISTED]:
        lines.append(_entry(pair))
    if len(pairs) > _PAIRS_LISTED:
        lines.append(f"  ... and {len(pairs) - _PAIRS_LISTED} more")
    return "\n".join(lines)


def _entry(pair: ChangedPair) -> str:
    lines = [
        f"  - {pair.describe()}",
        f"      expected  = [{truncate(display_value(pair.expected_output), 100)}]",
        f"      baseline  = [{truncate(display_value(pair.baseline_output), 100)}]",
        f"      candidate = [{truncate(display_value(pair.candidate_output), 100)}]",
    ]
    row = pair.candidate[0]
    reason = str(row.error) if row.error is not None else row.explanation
    if reason:
        lines.append(f"      reason    = {truncate(reason, 200)}")
    return "\n".join(lines)
