"""A judge calibrated against the reviewers' stored labels, and the reviewers' agreement.

Nothing here calls a model: the judge's verdicts are the stored rows', the labels the store's.
The statistics are the report's (:class:`~aeval.Calibration`, ``aeval._util._stats``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from .._reporting._judging import Calibration, CalibrationCounter
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow
from .._util._stats import Kappa, cohen_kappa, fleiss_kappa
from ._labels import RowLabel

__all__ = ["LabelCalibration", "ReviewerAgreement", "ReviewerPair", "calibrate_labels"]

Key = tuple[str, int, str | None]


@dataclass(frozen=True, slots=True)
class ReviewerPair:
    """How two reviewers agree on the rows both labelled (Cohen's kappa).

    Attributes:
        reviewers: The two reviewers, in name order.
        rows: Rows both labelled (current labels).
        agreed: Of those, rows with the same verdict.
        statistics: Cohen's kappa with its standard error; ``None`` when undefined (no
            row, or a reviewer gave one verdict only).
    """

    reviewers: tuple[str, str]
    rows: int
    agreed: int
    statistics: Kappa | None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa, ``None`` when undefined."""
        return None if self.statistics is None else self.statistics.kappa

    @property
    def accuracy(self) -> float | None:
        """Agreed rows / rows (0-1)."""
        return self.agreed / self.rows if self.rows else None

    def describe(self) -> str:
        """``ann / bob: kappa 0.71 [0.52, 0.90] · 90.00% agreed over 40 rows``."""
        who = " / ".join(self.reviewers)
        if not self.rows:
            return f"{who}: no row labelled by both"
        agreed = f"{100 * (self.accuracy or 0.0):.2f}% agreed over {self.rows} rows"
        if self.statistics is None:
            return f"{who}: kappa undefined (one of them gave one verdict only) · {agreed}"
        low, high = self.statistics.interval()
        return f"{who}: kappa {self.statistics.kappa:.2f} [{low:.2f}, {high:.2f}] · {agreed}"


@dataclass(frozen=True, slots=True)
class ReviewerAgreement:
    """How the reviewers agree with each other, from the same labels.

    Two reviewers: Cohen's kappa over the rows both labelled. More: Fleiss' kappa over the
    rows every one of them labelled, and Cohen's kappa for each pair.

    Attributes:
        reviewers: The reviewers, in name order.
        pairs: Cohen's kappa of each pair.
        rows: Rows every reviewer labelled (Fleiss' items; with two, the pair's rows).
        fleiss: Fleiss' kappa over those rows (three reviewers or more), ``None`` when
            undefined.
    """

    reviewers: tuple[str, ...]
    pairs: tuple[ReviewerPair, ...]
    rows: int
    fleiss: float | None = None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa of the two reviewers, or Fleiss' kappa of three or more."""
        if len(self.reviewers) == 2:
            return self.pairs[0].kappa
        return self.fleiss

    def describe(self) -> str:
        """One line: the kappa of the reviewers' agreement."""
        if len(self.reviewers) == 2:
            return f"Cohen's kappa {self.pairs[0].describe()}"
        shown = "undefined" if self.fleiss is None else f"{self.fleiss:.2f}"
        return (
            f"Fleiss' kappa {shown} over the {self.rows} rows all {len(self.reviewers)} "
            "reviewers labelled"
        )


@dataclass(frozen=True, slots=True)
class LabelCalibration:
    """One strategy's verdicts against the reviewers' stored labels, and the reviewers'
    agreement.

    Attributes:
        strategy: The strategy.
        review: The verdicts against the stored labels (``source: review``). With several
            reviewers (and no ``reviewer``) a row's label is their majority; a tie leaves
            the row out (:attr:`ties`).
        sample_file: The verdicts against the ``label:`` of the sample files, when the run's
            samples had some (``source: sample file``), else ``None``.
        reviewers: The reviewers whose current labels counted.
        reviewer: The one reviewer asked for, if any.
        agreement: The reviewers' agreement (``None`` with fewer than two).
        stale: Labels left out because the row's output changed since.
        ties: Rows left out because their reviewers split evenly.
    """

    strategy: str
    review: Calibration
    sample_file: Calibration | None
    reviewers: tuple[str, ...]
    reviewer: str | None = None
    agreement: ReviewerAgreement | None = None
    stale: int = 0
    ties: int = 0

    @property
    def kappa(self) -> float | None:
        """The judge's Cohen's kappa against the stored labels."""
        return self.review.kappa


def _pair(
    first: str, second: str, rows: Iterable[dict[str, bool]]
) -> tuple[ReviewerPair, list[dict[str, bool]]]:
    table = [[0, 0], [0, 0]]
    both = [votes for votes in rows if first in votes and second in votes]
    for votes in both:
        table[0 if votes[first] else 1][0 if votes[second] else 1] += 1
    counts = ((table[0][0], table[0][1]), (table[1][0], table[1][1]))
    agreed = table[0][0] + table[1][1]
    return ReviewerPair((first, second), len(both), agreed, cohen_kappa(counts)), both


def reviewer_agreement(votes: Sequence[dict[str, bool]]) -> ReviewerAgreement | None:
    """The agreement of the reviewers of ``votes`` (per row: reviewer → passed)."""
    reviewers = tuple(sorted({name for row in votes for name in row}))
    if len(reviewers) < 2:
        return None
    pairs = tuple(_pair(a, b, votes)[0] for a, b in combinations(reviewers, 2))
    if len(reviewers) == 2:
        return ReviewerAgreement(reviewers, pairs, pairs[0].rows)
    full = [row for row in votes if len(row) == len(reviewers)]
    counts = [(sum(row.values()), len(row) - sum(row.values())) for row in full]
    return ReviewerAgreement(reviewers, pairs, len(full), fleiss_kappa(counts))


def _strategy_of(labelled: dict[str | None, int], strategy: str | None) -> str:
    if strategy is not None:
        if strategy not in labelled:
            shown = ", ".join(repr(s) for s in labelled) or "none"
            raise ValueError(
                f"the strategy {strategy!r} has no current review label in this run "
                f"(strategies with some: {shown})"
            )
        return strategy
    named = [s for s in labelled if s is not None]
    if not named:
        raise ValueError(
            "the labelled rows have no strategy (a run without strategies): there is no "
            "verdict to calibrate"
        )
    if len(named) > 1:
        raise ValueError(
            f"several strategies have labelled rows ({', '.join(named)}): name one "
            "(--strategy S, strategy=...)"
        )
    return named[0]


def calibrate_labels(
    report: EvaluationReport,
    labels: Iterable[RowLabel],
    *,
    strategy: str | None = None,
    reviewer: str | None = None,
) -> LabelCalibration:
    """How one strategy's stored verdicts agree with the reviewers' stored labels.

    No model is called: the verdicts are the run's rows. Stale labels (the output changed
    since) are left out and counted. The labels typed in the sample files (``label:``) are
    reported apart (:attr:`LabelCalibration.sample_file`).

    Example::

        async with aeval.RunStore() as store:
            report = await store.load("support-bot@latest")
            labels = await store.labels("support-bot@latest")
        calibration = aeval.calibrate_labels(report, labels, strategy="judge")
        print(calibration.review.describe())  # kappa 0.71 [0.52, 0.90] · accuracy 86.00% ...

    Args:
        report: The run (``await store.load(ref)``).
        labels: Its labels (``await store.labels(ref)``).
        strategy: The strategy; may be left out when one strategy has labelled rows.
        reviewer: Only this reviewer's labels calibrate the judge (the agreement between
            reviewers still counts every reviewer).

    Raises:
        ValueError: No current label (of ``reviewer``), the strategy has none, or several
            strategies have and none was named.
    """
    everything = list(labels)
    current = [found for found in everything if not found.stale]
    mine = [found for found in current if reviewer is None or found.reviewer == reviewer]
    if not mine:
        who = f" by {reviewer!r}" if reviewer is not None else ""
        reviewers = sorted({found.reviewer for found in current})
        extra = f" (reviewers with some: {', '.join(reviewers)})" if reviewer and reviewers else ""
        stale = sum(found.stale for found in everything)
        also = f"; {stale} stale label(s) left out (their output changed)" if stale else ""
        raise ValueError(f"no current review label{who} in this run{extra}{also}")
    labelled: dict[str | None, int] = {}
    for found in mine:
        labelled[found.strategy] = labelled.get(found.strategy, 0) + 1
    chosen = _strategy_of(labelled, strategy)
    votes: dict[Key, dict[str, bool]] = {}
    for found in current:
        if found.strategy == chosen:
            votes.setdefault(found.key, {})[found.reviewer] = found.label.passed
    counter = CalibrationCounter(chosen)
    ties = 0
    rows: dict[Key, EvaluationRow] = {
        (row.name, row.repeat, row.strategy): row
        for row in report.evaluations
        if row.strategy == chosen
    }
    for key, row_votes in votes.items():
        row = rows.get(key)
        counted = [v for name, v in row_votes.items() if reviewer is None or name == reviewer]
        if row is None or not counted:
            continue
        passes = sum(counted)
        if passes * 2 == len(counted):
            ties += 1
            continue
        counter.add(row, "pass" if passes * 2 > len(counted) else "fail")
    return LabelCalibration(
        strategy=chosen,
        review=counter.freeze(),
        sample_file=report.calibration.get(chosen),
        reviewers=tuple(sorted({found.reviewer for found in mine if found.strategy == chosen})),
        reviewer=reviewer,
        agreement=reviewer_agreement(list(votes.values())),
        stale=sum(found.stale and found.strategy == chosen for found in everything),
        ties=ties,
    )
