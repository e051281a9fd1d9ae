"""Building a comparison of two runs: the rows of each side aligned into pairs, the paired
statistics of every scope (overall, per tag, per strategy), the warnings.

How the numbers are made (``docs/history.md`` says it in plain words):

- Rows are aligned by (sample name, strategy); a pair's value on a side is the share of its
  applicable rows (repeats) that passed. Pairs found on one side only are listed, not
  compared; a pair with no applicable row on a side (its sample states no expectation for
  the check) is not compared either, and a warning counts such pairs. A sample keeps its
  weight: its value is the mean over its compared pairs, weighted by all its aligned pairs
  (the report's rule, ``aeval._reporting._counters.add_cluster``).
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from .._exceptions import ComparisonError
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow, Outcome
from .._util._stats import MomentsCounter, normal_quantile
from ._align import PairKey, SideRows, group_rows
from ._comparison import MCNEMAR, PAIRED_Z, SIGN_TEST, ChangedPair, Comparison
from ._significance import (
    holm,
    mcnemar_exact,
    minimum_detectable_effect,
    normal_two_sided,
    sign_test,
)

__all__ = ["compare_sides", "side_rows"]

_NO_SPREAD = "no test: fewer than two samples"
_NAMES_SHOWN = 5


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
    applies: bool

    @classmethod
    def of(
        cls, key: PairKey, baseline: tuple[EvaluationRow, ...], candidate: tuple[EvaluationRow, ...]
    ) -> _Pair:
        base, cand = _applicable(baseline), _applicable(candidate)
        return cls(
            key,
            baseline,
            candidate,
            sum(row.passed for row in baseline) / base if base else 0.0,
            sum(row.passed for row in candidate) / cand if cand else 0.0,
            bool(base and cand),
        )

    def changed(self) -> ChangedPair:
        return ChangedPair(self.key.sample, self.key.strategy, self.baseline, self.candidate)


def _applicable(rows: Iterable[EvaluationRow]) -> int:
    return sum(row.outcome is not Outcome.NOT_APPLICABLE for row in rows)


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
    sizes: dict[str, int] = {}
    clusters: dict[str, list[_Pair]] = {}
    for pair in pairs:
        sizes[pair.key.sample] = sizes.get(pair.key.sample, 0) + 1
        if pair.applies:
            clusters.setdefault(pair.key.sample, []).append(pair)
    pairs = [pair for pair in pairs if pair.applies]
    difference, baseline, candidate = MomentsCounter(), MomentsCounter(), MomentsCounter()
    for sample, group in clusters.items():
        size = sizes[sample]
        weight = 1.0 if size == len(group) else size / len(group)
        difference.add_cluster(
            size, weight * sum(p.candidate_share - p.baseline_share for p in group)
        )
        baseline.add_cluster(size, weight * sum(p.baseline_share for p in group))
        candidate.add_cluster(size, weight * sum(p.candidate_share for p in group))
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
    if not any(pair.applies for pair in pairs):
        raise ComparisonError(
            f"the baseline ({baseline.label}) and the candidate ({candidate.label}) share "
            f"{len(pairs)} (sample, strategy) pairs, but none has an applicable row on both "
            "sides (every one is not applicable: its sample states no expectation for its "
            "check): there is nothing to compare"
        )
    labels = (baseline.label, candidate.label)

    def tags_of(side: SideRows, sample: str) -> frozenset[str]:
        return side.tags.get(sample, frozenset())

    def both_tags(sample: str) -> frozenset[str]:
        return tags_of(baseline, sample) | tags_of(candidate, sample)

    compared = [p for p in pairs if p.applies]
    tag_names = dict.fromkeys(tag for p in compared for tag in sorted(both_tags(p.key.sample)))
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
    strategy_names = dict.fromkeys(p.key.strategy for p in compared if p.key.strategy is not None)
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
    left_out = sum(not p.applies for p in pairs)
    if left_out:
        found.append(
            f"{left_out} of the {len(pairs)} aligned (sample, strategy) pairs are not "
            "applicable on a side (the sample states no expectation for the check there): "
            "they are not compared"
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
