"""The comparison of two runs: aligned, paired, with its uncertainty and a verdict in words
(built by :mod:`aeval._compare._paired`, whose docstring says how the numbers are made)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from .._reporting._report import EvaluationReport, partial_note
from .._reporting._results import EvaluationRow
from .._util._numbers import format_number
from ._align import PairKey

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "MCNEMAR",
    "PAIRED_Z",
    "SIGN_TEST",
    "ChangedPair",
    "Comparison",
    "Verdict",
    "format_p",
    "signed",
]

Verdict = Literal["better", "worse", "no significant difference"]

MCNEMAR = "exact McNemar test"
PAIRED_Z = "paired z-test on per-sample differences"
SIGN_TEST = "sign test on per-sample differences"
_EMPTY: Mapping[str, Comparison] = MappingProxyType({})


def signed(value: float) -> str:
    """``+5.00``, ``-3.10`` or ``0.00`` (two decimals, rounded half up)."""
    text = format_number(value)
    if text.lstrip("-") == "0.00":
        return "0.00"
    return text if text.startswith("-") else f"+{text}"


def format_p(p: float) -> str:
    """``p = 0.042`` or ``p < 0.001``."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


@dataclass(frozen=True, slots=True)
class ChangedPair:
    """A (sample, strategy) pair whose verdict changed, with its rows on both sides.

    Attributes:
        sample: The sample's name.
        strategy: The strategy's name (``None`` in a run without strategies).
        baseline: The pair's rows in the baseline (one per repeat).
        candidate: Its rows in the candidate.
    """

    sample: str
    strategy: str | None
    baseline: tuple[EvaluationRow, ...]
    candidate: tuple[EvaluationRow, ...]

    @property
    def key(self) -> PairKey:
        """The (sample, strategy) the rows were aligned by."""
        return PairKey(self.sample, self.strategy)

    @property
    def baseline_passed(self) -> int:
        """Baseline rows that passed."""
        return sum(row.passed for row in self.baseline)

    @property
    def candidate_passed(self) -> int:
        """Candidate rows that passed."""
        return sum(row.passed for row in self.candidate)

    @property
    def baseline_output(self) -> Any:
        """The baseline's output (its first repeat's)."""
        return self.baseline[0].output

    @property
    def candidate_output(self) -> Any:
        """The candidate's output (its first repeat's)."""
        return self.candidate[0].output

    @property
    def expected_output(self) -> Any:
        """The sample's expected output, as the candidate has it."""
        return self.candidate[0].expected_output

    @property
    def tags(self) -> tuple[str, ...]:
        """The sample's tags on either side."""
        return tuple(dict.fromkeys((*self.baseline[0].tags, *self.candidate[0].tags)))

    def verdict_on(self, side: Literal["baseline", "candidate"]) -> str:
        """``failed`` for one row, ``2/3 passed`` for repeats."""
        rows = self.baseline if side == "baseline" else self.candidate
        if len(rows) == 1:
            return rows[0].outcome.value
        return f"{sum(row.passed for row in rows)}/{len(rows)} passed"

    def describe(self) -> str:
        """``capital [exact_match]: passed → failed``."""
        return f"{self.key}: {self.verdict_on('baseline')} → {self.verdict_on('candidate')}"


@dataclass(frozen=True, slots=True)
class Comparison:
    """How a candidate run compares with a baseline run (see ``aeval.compare``).

    Scores are percentages over the aligned pairs; ``difference`` and ``interval`` are in
    percentage points, candidate minus baseline. A per-tag or per-strategy comparison
    (:meth:`for_tag`, :meth:`for_strategy`) has the same fields over its own pairs, and its
    ``adjusted_p_value`` is Holm-adjusted over the tags (or the strategies).

    Attributes:
        baseline_score: The baseline's score over the aligned pairs (0-100).
        candidate_score: The candidate's score over the aligned pairs (0-100).
        difference: ``candidate_score - baseline_score``, in percentage points.
        interval: The (low, high) interval of the difference at ``confidence``.
        p_value: The two-sided p-value of :attr:`test`.
        test: The test's name: exact McNemar, the paired z-test or the sign test.
        regressions: The pairs that passed less often in the candidate (passed → not passed).
        fixes: The pairs that passed more often in the candidate (not passed → passed).
        only_in_baseline: The pairs found in the baseline only (not compared).
        only_in_candidate: The pairs found in the candidate only (not compared).
        minimum_detectable_effect: The smallest true difference, in points, that this many
            samples detect with 80% power at this confidence (``None`` under two samples).
        new_errors: The pairs with an error row in the candidate and none in the baseline.
        newly_unscored: The pairs with an unscored row in the candidate only.
        adjusted_p_value: The p-value the verdict uses: Holm-adjusted for a tag or a strategy,
            the p-value itself overall.
        confidence: The confidence of the interval and of "significant" (alpha = 1 - it).
        samples: Aligned samples (the clusters).
        pairs: Aligned (sample, strategy) pairs.
        standard_error: The clustered standard error of the difference, in points.
        baseline_interval: The interval of the baseline's score.
        candidate_interval: The interval of the candidate's score.
        scope: ``"overall"``, ``"tag <name>"`` or ``"strategy <name>"``.
        baseline_label: Where the baseline came from (a file, a run).
        candidate_label: Where the candidate came from.
        warnings: What the reader must know (a partial run, a changed dataset).
    """

    baseline_score: float
    candidate_score: float
    difference: float
    interval: tuple[float, float]
    p_value: float
    test: str
    regressions: tuple[ChangedPair, ...]
    fixes: tuple[ChangedPair, ...]
    only_in_baseline: tuple[PairKey, ...]
    only_in_candidate: tuple[PairKey, ...]
    minimum_detectable_effect: float | None
    new_errors: tuple[ChangedPair, ...] = ()
    newly_unscored: tuple[ChangedPair, ...] = ()
    adjusted_p_value: float = 1.0
    confidence: float = 0.95
    samples: int = 0
    pairs: int = 0
    standard_error: float | None = None
    baseline_interval: tuple[float, float] = (0.0, 100.0)
    candidate_interval: tuple[float, float] = (0.0, 100.0)
    scope: str = "overall"
    baseline_label: str = "baseline"
    candidate_label: str = "candidate"
    warnings: tuple[str, ...] = ()
    tag_comparisons: Mapping[str, Comparison] = field(
        default_factory=lambda: _EMPTY, repr=False, compare=False
    )
    strategy_comparisons: Mapping[str, Comparison] = field(
        default_factory=lambda: _EMPTY, repr=False, compare=False
    )

    @classmethod
    def of(
        cls,
        baseline: EvaluationReport,
        candidate: EvaluationReport,
        *,
        confidence: float = 0.95,
    ) -> Comparison:
        """Compare two reports in hand (no I/O; ``aeval.compare`` also reads files and runs).

        Raises:
            ComparisonError: A report does not hold every row, two samples share a name, or
                the reports share no (sample, strategy) pair.
        """
        from ._paired import compare_sides, side_rows

        return compare_sides(
            side_rows(baseline, role="baseline", label="baseline report"),
            side_rows(candidate, role="candidate", label="candidate report"),
            confidence=confidence,
            partial=(partial_note(baseline), partial_note(candidate)),
        )

    # -- the verdict ------------------------------------------------------------------------

    @property
    def significant(self) -> bool:
        """Whether :attr:`adjusted_p_value` is below ``1 - confidence``."""
        return self.adjusted_p_value < 1.0 - self.confidence

    @property
    def verdict(self) -> Verdict:
        """``"better"``, ``"worse"`` or ``"no significant difference"``."""
        if not self.significant or self.difference == 0.0:
            return "no significant difference"
        return "better" if self.difference > 0 else "worse"

    def is_significant_regression(self, margin: float = 0.0) -> bool:
        """Significantly worse, and by more than ``margin`` points (``difference < -margin``)."""
        return self.verdict == "worse" and self.difference < -margin

    def is_non_inferior(self, margin: float) -> bool:
        """Whether the interval's low end is above ``-margin``: any loss is smaller than it."""
        return self.interval[0] > -margin

    def significant_regressions(self, margin: float = 0.0) -> tuple[Comparison, ...]:
        """The comparisons, overall then per tag, that are significant regressions."""
        scopes = (self, *self.tag_comparisons.values())
        return tuple(scope for scope in scopes if scope.is_significant_regression(margin))

    @property
    def power_note(self) -> str:
        """``with 40 samples only a change of 18 points or more can be told from noise``."""
        unit = "sample" if self.samples == 1 else "samples"
        mde = self.minimum_detectable_effect
        if mde is None or mde >= 100.0:
            return f"with {self.samples} {unit} no change can be told from noise"
        size = f"{mde:.0f}" if mde >= 10 else f"{mde:.1f}"
        return (
            f"with {self.samples} {unit} only a change of {size} points or more can be told "
            "from noise"
        )

    def describe(self) -> str:
        """One line: the scores, the difference with its interval, the test, the verdict."""
        low, high = self.interval
        level = f"{self.confidence * 100:g}% CI"
        adjusted = ""
        if self.scope != "overall" and self.adjusted_p_value != self.p_value:
            adjusted = f", Holm-adjusted {format_p(self.adjusted_p_value)}"
        return (
            f"{format_number(self.baseline_score)}% → {format_number(self.candidate_score)}%: "
            f"{signed(self.difference)} points ({level} {signed(low)} to {signed(high)}), "
            f"{format_p(self.p_value)} ({self.test}{adjusted}): {self.verdict}"
        )

    # -- scopes -----------------------------------------------------------------------------

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags of the aligned samples, each with its own comparison."""
        return tuple(self.tag_comparisons)

    @property
    def strategies(self) -> tuple[str, ...]:
        """The strategies of the aligned pairs, each with its own comparison."""
        return tuple(self.strategy_comparisons)

    def for_tag(self, tag: str) -> Comparison:
        """The comparison over the samples carrying ``tag`` (on either side).

        Raises:
            KeyError: No aligned sample carries ``tag`` (the message lists the tags).
        """
        found = self.tag_comparisons.get(tag)
        if found is None:
            raise KeyError(_unknown("tag", tag, self.tags))
        return found

    def for_strategy(self, name: str) -> Comparison:
        """The comparison over the pairs of strategy ``name``.

        Raises:
            KeyError: No aligned pair has that strategy (the message lists the strategies).
        """
        found = self.strategy_comparisons.get(name)
        if found is None:
            raise KeyError(_unknown("strategy", name, self.strategies))
        return found

    # -- output -----------------------------------------------------------------------------

    def format(
        self,
        format: str = "markdown",
        *,
        margin: float = 0.0,
        non_inferiority: float | None = None,
    ) -> str:
        """Render as ``"markdown"``, ``"json"``, ``"html"``, ``"junit"``, ``"text"`` or a
        format registered with ``register_formatter(..., subject="comparison")``.

        Args:
            format: The format's name.
            margin: The points a significant regression must exceed to be flagged as one.
            non_inferiority: A non-inferiority margin for JUnit to check as one more case.

        Raises:
            FormatError: An unknown format.
        """
        from ..formatters._registry import render

        return render("comparison", format, self, margin=margin, non_inferiority=non_inferiority)

    def print(self, console: Console | None = None, *, margin: float = 0.0) -> None:
        """Print the comparison as tables (what ``aeval compare`` prints).

        Args:
            console: A rich ``Console`` (default: a new one on standard output).
            margin: The margin, in points, a regression must exceed to be flagged.
        """
        from ..formatters._comparison_terminal import print_comparison

        print_comparison(self, console=console, margin=margin)

    async def save_as(
        self,
        path: str | PathLike[str],
        format: str | None = None,
        *,
        margin: float = 0.0,
        non_inferiority: float | None = None,
    ) -> Path:
        """Write one file; the format defaults to the one its extension names (``.md``,
        ``.json``, ``.html``, ``.xml`` for JUnit, ``.txt``).

        Raises:
            FormatError: No format given and the extension names none.
        """
        import anyio
        import anyio.to_thread

        from .._util._files import write_atomic
        from ..formatters._registry import formatter_for_path, render

        target = Path(path)
        name = format or formatter_for_path(target, subject="comparison").name
        text = render("comparison", name, self, margin=margin, non_inferiority=non_inferiority)
        await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(write_atomic, target, text)
        return target


def _unknown(kind: str, name: str, known: Sequence[str]) -> str:
    listed = ", ".join(repr(k) for k in known) or "none"
    return f"no aligned pair has the {kind} {name!r}; the {kind}s compared: {listed}"
