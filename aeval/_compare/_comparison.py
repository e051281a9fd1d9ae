"""The comparison of two runs: aligned, paired, with its uncertainty and a verdict in words.

How the numbers are made (``docs/history.md`` says it in plain words):

- Rows are aligned by (sample name, strategy); a pair's value on a side is the share of its
  rows (repeats) that passed. Pairs found on one side only are listed, not compared.
- Each sample is a cluster. With m_i aligned pairs in sample i and the pair differences
  ``delta = candidate share - baseline share``, the per-sample difference is
  ``d_i = mean of its deltas``; the difference is ``D = sum_i m_i d_i / N`` over the N pairs
  (the mean of the d_i when every sample has as many pairs), in percentage points.
- Its standard error is the clustered one of every score (``aeval._util._stats``, Miller's paired
  form): ``SE = sqrt(C / (C - 1)) * (1 / N) * sqrt(sum_i m_i^2 (d_i - D)^2)`` over C samples,
  which is ``sd(d) / sqrt(C)`` with one pair per sample. The interval is ``D ± z * SE``.
  When every sample moved by exactly the same amount (SE = 0), that interval would be a
  point, which reads as certainty. When no sample moved (identical runs), it is then
  ``± z² / (C + z²)``, Wilson's upper bound on the share of C samples that could move when
  none did (about the rule of three's 3 / C). When every sample moved alike (0 % → 100 %),
  it is Newcombe's hybrid score interval from the two sides' Wilson intervals.
- The p-value is the exact McNemar test when every aligned sample is one pair of one row on
  each side (no repeats, one strategy): then the pairs are independent binary pairs. Otherwise
  it is a paired z-test, ``2 * (1 - Phi(|D| / SE))``, the test the interval inverts; when
  every sample moved by exactly the same amount (SE = 0), a sign test on the samples.
- Per-tag and per-strategy p-values are adjusted with Holm's method, each family apart.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from .._exceptions import ComparisonError
from .._reporting._report import EvaluationReport, partial_note
from .._reporting._results import EvaluationRow, Outcome
from .._util._numbers import format_number
from .._util._stats import MomentsCounter, normal_quantile
from ._align import PairKey, SideRows, group_rows
from ._significance import (
    holm,
    mcnemar_exact,
    minimum_detectable_effect,
    normal_two_sided,
    sign_test,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "MCNEMAR",
    "PAIRED_Z",
    "SIGN_TEST",
    "ChangedPair",
    "Comparison",
    "Verdict",
    "compare_sides",
    "format_p",
    "side_rows",
    "signed",
]

Verdict = Literal["better", "worse", "no significant difference"]

MCNEMAR = "exact McNemar test"
PAIRED_Z = "paired z-test on per-sample differences"
SIGN_TEST = "sign test on per-sample differences"
_NO_SPREAD = "no test: fewer than two samples"
_EMPTY: Mapping[str, Comparison] = MappingProxyType({})
_NAMES_SHOWN = 5


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


# -- building -------------------------------------------------------------------------------


def side_rows(report: EvaluationReport, *, role: str, label: str) -> SideRows:
    """The rows of ``report``, grouped for comparison.

    Raises:
        ComparisonError: The report does not hold every row, or two samples share a name.
    """
    held = len(report.evaluations)
    if not report.holds_all_rows and held < report.evaluation_count:
        raise ComparisonError(
            f"the {role} ({label}) holds {held} of its {report.evaluation_count} rows (it was "
            "built with keep='failures' or keep='none'), and a comparison needs every row: "
            "compare the run's rows.jsonl, or build the report with keep='all'",
            side=role,
        )
    return group_rows(report.evaluations, role=role, label=label)


@dataclass(frozen=True, slots=True)
class _Pair:
    key: PairKey
    baseline: tuple[EvaluationRow, ...]
    candidate: tuple[EvaluationRow, ...]
    baseline_share: float
    candidate_share: float

    @classmethod
    def of(
        cls, key: PairKey, baseline: tuple[EvaluationRow, ...], candidate: tuple[EvaluationRow, ...]
    ) -> _Pair:
        return cls(
            key,
            baseline,
            candidate,
            sum(row.passed for row in baseline) / len(baseline),
            sum(row.passed for row in candidate) / len(candidate),
        )

    def changed(self) -> ChangedPair:
        return ChangedPair(self.key.sample, self.key.strategy, self.baseline, self.candidate)


def _has(rows: Iterable[EvaluationRow], outcome: Outcome) -> bool:
    return any(row.outcome is outcome for row in rows)


def _difference_interval(
    center: float,
    se: float | None,
    z: float,
    sides: tuple[tuple[float, tuple[float, float]], tuple[float, tuple[float, float]]],
    samples: int,
) -> tuple[float, float]:
    if se is None:
        return (-100.0, 100.0)
    if se > 0.0:
        return (max(-100.0, center - z * se), min(100.0, center + z * se))
    if center == 0.0:
        width = 100.0 * z * z / (samples + z * z)
        return (-width, width)
    (base, (base_low, base_high)), (cand, (cand_low, cand_high)) = sides
    low = center - math.hypot(cand - cand_low, base_high - base)
    high = center + math.hypot(cand_high - cand, base - base_low)
    return (max(-100.0, low), min(100.0, high))


def _scope(
    scope: str,
    pairs: Sequence[_Pair],
    only_in_baseline: tuple[PairKey, ...],
    only_in_candidate: tuple[PairKey, ...],
    *,
    confidence: float,
    labels: tuple[str, str],
) -> Comparison:
    clusters: dict[str, list[_Pair]] = {}
    for pair in pairs:
        clusters.setdefault(pair.key.sample, []).append(pair)
    difference, baseline, candidate = MomentsCounter(), MomentsCounter(), MomentsCounter()
    for group in clusters.values():
        size = len(group)
        difference.add_cluster(size, sum(p.candidate_share - p.baseline_share for p in group))
        baseline.add_cluster(size, sum(p.baseline_share for p in group))
        candidate.add_cluster(size, sum(p.candidate_share for p in group))
    moments = difference.freeze()
    samples = moments.clusters
    se = moments.standard_error
    binary = all(len(group) == 1 for group in clusters.values()) and all(
        len(p.baseline) == 1 and len(p.candidate) == 1 for p in pairs
    )
    if binary:
        regressed = sum(p.baseline_share > p.candidate_share for p in pairs)
        fixed = sum(p.baseline_share < p.candidate_share for p in pairs)
        p_value, test = mcnemar_exact(regressed, fixed), MCNEMAR
        power_se = math.sqrt(regressed + fixed) / samples
    elif se is None:
        p_value, test, power_se = 1.0, _NO_SPREAD, 0.0
    elif se > 0.0:
        p_value, test, power_se = normal_two_sided(moments.mean, se), PAIRED_Z, se
    else:
        moved = [sum(p.candidate_share - p.baseline_share for p in g) for g in clusters.values()]
        up, down = sum(d > 0 for d in moved), sum(d < 0 for d in moved)
        p_value, test, power_se = sign_test(up, down), SIGN_TEST, 0.0
    z = normal_quantile(confidence)
    mde = minimum_detectable_effect(power_se, samples, confidence)
    base_scores, cand_scores = baseline.freeze(), candidate.freeze()
    low_b, high_b = base_scores.interval(confidence)
    low_c, high_c = cand_scores.interval(confidence)
    changed = [p for p in pairs if p.baseline_share != p.candidate_share]
    return Comparison(
        baseline_score=100.0 * base_scores.mean,
        candidate_score=100.0 * cand_scores.mean,
        difference=100.0 * moments.mean,
        interval=_difference_interval(
            100.0 * moments.mean,
            None if se is None else 100.0 * se,
            z,
            (
                (100.0 * base_scores.mean, (100.0 * low_b, 100.0 * high_b)),
                (100.0 * cand_scores.mean, (100.0 * low_c, 100.0 * high_c)),
            ),
            samples,
        ),
        p_value=p_value,
        test=test,
        regressions=tuple(p.changed() for p in changed if p.candidate_share < p.baseline_share),
        fixes=tuple(p.changed() for p in changed if p.candidate_share > p.baseline_share),
        only_in_baseline=only_in_baseline,
        only_in_candidate=only_in_candidate,
        minimum_detectable_effect=None if mde is None else 100.0 * mde,
        new_errors=tuple(
            p.changed()
            for p in pairs
            if _has(p.candidate, Outcome.ERROR) and not _has(p.baseline, Outcome.ERROR)
        ),
        newly_unscored=tuple(
            p.changed()
            for p in pairs
            if _has(p.candidate, Outcome.UNSCORED) and not _has(p.baseline, Outcome.UNSCORED)
        ),
        adjusted_p_value=p_value,
        confidence=confidence,
        samples=samples,
        pairs=len(pairs),
        standard_error=None if se is None else 100.0 * se,
        baseline_interval=(100.0 * low_b, 100.0 * high_b),
        candidate_interval=(100.0 * low_c, 100.0 * high_c),
        scope=scope,
        baseline_label=labels[0],
        candidate_label=labels[1],
    )


def _adjusted(family: dict[str, Comparison]) -> dict[str, Comparison]:
    adjusted = holm([c.p_value for c in family.values()])
    return {
        name: replace(c, adjusted_p_value=p)
        for (name, c), p in zip(family.items(), adjusted, strict=True)
    }


def compare_sides(
    baseline: SideRows,
    candidate: SideRows,
    *,
    confidence: float = 0.95,
    partial: tuple[str | None, str | None] = (None, None),
) -> Comparison:
    """Compare two grouped sides: overall, per tag and per strategy.

    Args:
        baseline: The baseline's rows.
        candidate: The candidate's rows.
        confidence: The confidence of the intervals and of "significant".
        partial: Each side's partial-run note (``None`` for a complete run).

    Raises:
        ComparisonError: The sides share no (sample, strategy) pair.
    """
    normal_quantile(confidence)
    pairs = [
        _Pair.of(key, rows, candidate.pairs[key])
        for key, rows in baseline.pairs.items()
        if key in candidate.pairs
    ]
    only_b = tuple(key for key in baseline.pairs if key not in candidate.pairs)
    only_c = tuple(key for key in candidate.pairs if key not in baseline.pairs)
    if not pairs:
        raise ComparisonError(_nothing_shared(baseline, candidate))
    labels = (baseline.label, candidate.label)

    def tags_of(side: SideRows, sample: str) -> frozenset[str]:
        return side.tags.get(sample, frozenset())

    def both_tags(sample: str) -> frozenset[str]:
        return tags_of(baseline, sample) | tags_of(candidate, sample)

    tag_names = dict.fromkeys(tag for p in pairs for tag in sorted(both_tags(p.key.sample)))
    tags = {
        tag: _scope(
            f"tag {tag}",
            [p for p in pairs if tag in both_tags(p.key.sample)],
            tuple(k for k in only_b if tag in tags_of(baseline, k.sample)),
            tuple(k for k in only_c if tag in tags_of(candidate, k.sample)),
            confidence=confidence,
            labels=labels,
        )
        for tag in tag_names
    }
    strategy_names = dict.fromkeys(p.key.strategy for p in pairs if p.key.strategy is not None)
    strategies = {
        name: _scope(
            f"strategy {name}",
            [p for p in pairs if p.key.strategy == name],
            tuple(k for k in only_b if k.strategy == name),
            tuple(k for k in only_c if k.strategy == name),
            confidence=confidence,
            labels=labels,
        )
        for name in strategy_names
    }
    overall = _scope("overall", pairs, only_b, only_c, confidence=confidence, labels=labels)
    return replace(
        overall,
        tag_comparisons=MappingProxyType(_adjusted(tags)),
        strategy_comparisons=MappingProxyType(_adjusted(strategies)),
        warnings=_warnings(baseline, candidate, pairs, partial),
    )


def _nothing_shared(baseline: SideRows, candidate: SideRows) -> str:
    def some(side: SideRows) -> str:
        keys = list(side.pairs)
        shown = ", ".join(repr(str(k)) for k in keys[:_NAMES_SHOWN])
        more = f" and {len(keys) - _NAMES_SHOWN} more" if len(keys) > _NAMES_SHOWN else ""
        return f"{shown}{more}" if keys else "no rows at all"

    return (
        f"the baseline ({baseline.label}) and the candidate ({candidate.label}) share no "
        f"(sample, strategy) pair: the baseline has {some(baseline)}; the candidate has "
        f"{some(candidate)}. Compare two runs of the same samples and strategies."
    )


def _warnings(
    baseline: SideRows,
    candidate: SideRows,
    pairs: Sequence[_Pair],
    partial: tuple[str | None, str | None],
) -> tuple[str, ...]:
    found = []
    for side, note in zip((baseline, candidate), partial, strict=True):
        if note is not None:
            found.append(
                f"the {side.role} ({side.label}) is a partial run ({note}): only the samples "
                "it evaluated are compared"
            )
    samples = dict.fromkeys(p.key.sample for p in pairs)
    changed = [
        name
        for name in samples
        if baseline.fingerprints.get(name) != candidate.fingerprints.get(name)
    ]
    if changed:
        shown = ", ".join(repr(name) for name in changed[:_NAMES_SHOWN])
        more = f" and {len(changed) - _NAMES_SHOWN} more" if len(changed) > _NAMES_SHOWN else ""
        found.append(
            f"{len(changed)} of the {len(samples)} aligned samples have other parameters or "
            f"another expected output in the candidate ({shown}{more}): the difference "
            "measures the change of dataset too"
        )
    return tuple(found)
