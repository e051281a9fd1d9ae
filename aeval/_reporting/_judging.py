"""How far to trust a judge: its agreement with human labels, and how it answered.

Two kinds of statistics are counted per strategy as rows arrive (O(1) per row, mergeable):

- **calibration**, for every strategy whose rows belong to labelled samples (a ``label``
  of ``pass`` or ``fail``, or a human score between 0 and 1, in the sample's metadata):
  the confusion matrix of the strategy's verdicts against the labels, accuracy, Cohen's
  kappa with its interval, and the rows where they disagree;
- **judge statistics**, for the rows of :class:`~aeval.strategies.AiJudgeStrategy` (their
  ``judges`` metadata): per judge, the replies that could not be read, the re-asks, the
  replies cut off at ``max_tokens``, and with several judges how often they agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._samples._labels import LABEL_KEY, read_label
from .._util._stats import Kappa, cohen_kappa
from ._results import EvaluationRow, Outcome

if TYPE_CHECKING:
    from ._report import EvaluationReport

__all__ = [
    "LABEL_KEY",
    "Calibration",
    "CalibrationCounter",
    "JUDGE_COLUMNS",
    "Disagreement",
    "JudgeCounts",
    "JudgeStatistics",
    "JudgeCounter",
    "calibrate",
    "judge_rows",
    "panel_line",
    "read_label",
]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A row whose verdict differs from its sample's human label.

    Attributes:
        sample: The sample's name.
        repeat: The repeat (0-based).
        label: The human verdict (``True``: pass).
        passed: The strategy's verdict.
        score: The strategy's score.
        explanation: The strategy's explanation.
    """

    sample: str
    repeat: int
    label: bool
    passed: bool
    score: float | None
    explanation: str | None


@dataclass(frozen=True, slots=True)
class Calibration:
    """One strategy's verdicts against the human labels of the samples.

    The confusion matrix counts rows with a verdict (passed or failed) whose sample has a
    label; ``unjudged`` counts the labelled rows without one (unscored, error, skipped).
    Kappa's interval is kappa ± z·SE with Fleiss, Cohen and Everitt's large-sample standard
    error: with a few dozen labels it is wide, which is the point of showing it. At perfect
    agreement that error is 0, and the interval is Wilson's interval of the agreement mapped
    to kappa instead of the point [1.00, 1.00]. Repeats count as rows, which makes the
    interval a little narrower than it should be.

    Attributes:
        strategy: The strategy's name.
        true_pass: Rows both the strategy and the label pass.
        true_fail: Rows both fail.
        false_pass: Rows the strategy passes and the label fails.
        false_fail: Rows the strategy fails and the label passes.
        unjudged: Labelled rows without a verdict.
        invalid_labels: Rows whose sample's label is neither pass/fail nor a 0-1 score.
        disagreements: The rows where the strategy and the label disagree.
    """

    strategy: str
    true_pass: int = 0
    true_fail: int = 0
    false_pass: int = 0
    false_fail: int = 0
    unjudged: int = 0
    invalid_labels: int = 0
    disagreements: tuple[Disagreement, ...] = ()

    @property
    def rows(self) -> int:
        """Labelled rows with a verdict (the matrix's total)."""
        return self.true_pass + self.true_fail + self.false_pass + self.false_fail

    @property
    def agreed(self) -> int:
        """Rows where the strategy and the label agree."""
        return self.true_pass + self.true_fail

    @property
    def confusion(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """``((label pass & passed, label pass & failed), (label fail & passed, label fail &
        failed))``: rows are the labels, columns the strategy's verdicts."""
        return ((self.true_pass, self.false_fail), (self.false_pass, self.true_fail))

    @property
    def accuracy(self) -> float | None:
        """Agreed rows / rows (0-1), ``None`` without rows."""
        return self.agreed / self.rows if self.rows else None

    @property
    def statistics(self) -> Kappa | None:
        """Kappa and its standard error; ``None`` when kappa is undefined (see
        :attr:`kappa_undefined`)."""
        return cohen_kappa(self.confusion)

    @property
    def kappa_undefined(self) -> str | None:
        """Why kappa is undefined, ``None`` when it is defined.

        Kappa measures agreement beyond chance, which needs both kinds of label and both
        kinds of verdict: when the labels or the verdicts are all one kind (a judge that
        passes everything), chance explains every agreement and kappa says nothing.
        """
        if not self.rows:
            return "no labelled row with a verdict"
        labels = _single(self.true_pass + self.false_fail, self.true_fail + self.false_pass)
        verdicts = _single(self.true_pass + self.false_pass, self.true_fail + self.false_fail)
        if labels is not None and verdicts is not None:
            if labels == verdicts:
                return f"every label and every verdict is {labels}"
            return f"every label is {labels} and every verdict {verdicts}"
        if labels is not None:
            return f"every human label is {labels}: agreement beyond chance needs both kinds"
        if verdicts is not None:
            return f"every verdict is {verdicts}: agreement beyond chance needs both kinds"
        return None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa (1: perfect agreement, 0: what chance gives, below 0: worse)."""
        stats = self.statistics
        return None if stats is None else stats.kappa

    def kappa_interval(self, confidence: float = 0.95) -> tuple[float, float] | None:
        """The interval of :attr:`kappa`, ``None`` when kappa is undefined."""
        stats = self.statistics
        return None if stats is None else stats.interval(confidence)

    def describe(self) -> str:
        """``kappa 0.62 [0.41, 0.83] · accuracy 82.00% over 50 rows``, or why not."""
        if not self.rows:
            return f"no labelled row with a verdict ({self.unjudged} without one)"
        accuracy = f"accuracy {100 * (self.accuracy or 0.0):.2f}% over {self.rows} rows"
        stats = self.statistics
        if stats is None:
            return f"kappa undefined ({self.kappa_undefined}) · {accuracy}"
        low, high = stats.interval()
        return f"kappa {stats.kappa:.2f} [{low:.2f}, {high:.2f}] · {accuracy}"


def _single(passes: int, fails: int) -> str | None:
    """``"pass"`` or ``"fail"`` when only that kind occurs, else ``None``."""
    if passes and not fails:
        return "pass"
    if fails and not passes:
        return "fail"
    return None


def _order(entry: tuple[int, int, Disagreement]) -> tuple[int, int]:
    return entry[0], entry[1]


class CalibrationCounter:
    """Counts one strategy's labelled rows (the aggregator keeps one per strategy)."""

    __slots__ = ("counts", "disagreements", "strategy")

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.counts = [0, 0, 0, 0, 0, 0]
        self.disagreements: list[tuple[int, int, Disagreement]] = []

    def add(self, row: EvaluationRow, value: Any) -> None:
        """Count ``row``, whose sample's label is ``value``."""
        label = read_label(value)
        counts = self.counts
        if label is None:
            counts[5] += 1
            return
        outcome = row.outcome
        if outcome is not Outcome.PASSED and outcome is not Outcome.FAILED:
            counts[4] += 1
            return
        passed = outcome is Outcome.PASSED
        counts[(0 if label else 2) + (0 if passed == label else 1)] += 1
        if passed != label:
            disagreement = Disagreement(
                row.name, row.repeat, label, passed, row.score, row.explanation
            )
            self.disagreements.append((row.index, row.repeat, disagreement))

    def absorb(self, other: CalibrationCounter) -> None:
        """Add another counter's rows."""
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.disagreements += other.disagreements

    def freeze(self) -> Calibration:
        """The counts as a value, disagreements in sample order."""
        true_pass, false_fail, true_fail, false_pass, unjudged, invalid = self.counts
        return Calibration(
            self.strategy,
            true_pass=true_pass,
            true_fail=true_fail,
            false_pass=false_pass,
            false_fail=false_fail,
            unjudged=unjudged,
            invalid_labels=invalid,
            disagreements=tuple(d for *_, d in sorted(self.disagreements, key=_order)),
        )


@dataclass(frozen=True, slots=True)
class JudgeCounts:
    """How one judge (a model of a judge strategy) answered.

    Attributes:
        verdicts: Rows this judge was asked about.
        unreadable: First replies that could not be read (parse failures).
        reasked: Replies it was asked again for.
        unscored: Verdicts that stayed unreadable.
        errors: Calls that failed.
        cut_off: Last replies cut off at ``max_tokens``.
        salvaged: Cut-off replies used as far as their score went.
        voted: Rows decided by several judges where this one gave a verdict.
        agreed: Of those, the rows whose decision it agreed with.
    """

    verdicts: int = 0
    unreadable: int = 0
    reasked: int = 0
    unscored: int = 0
    errors: int = 0
    cut_off: int = 0
    salvaged: int = 0
    voted: int = 0
    agreed: int = 0

    @property
    def parse_failure_rate(self) -> float | None:
        """Unreadable first replies / verdicts asked (0-1)."""
        return self.unreadable / self.verdicts if self.verdicts else None

    @property
    def reask_rate(self) -> float | None:
        """Re-asks / verdicts asked (0-1)."""
        return self.reasked / self.verdicts if self.verdicts else None

    @property
    def agreement(self) -> float | None:
        """How often it agreed with its panel's decision (several judges only)."""
        return self.agreed / self.voted if self.voted else None


_COUNT_FIELDS = tuple(JudgeCounts.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class JudgeStatistics:
    """How the judges of one judge strategy answered over a run.

    Attributes:
        judges: Counts per judge (its model's name, numbered when a model sits twice).
        decided: Rows decided by several judges (by majority or mean).
        agreement_sum: The sum of those rows' agreement (the share of readable judges that
            agree with the decision).
        unanimous: Of those, the rows where every readable judge agreed.
    """

    judges: Mapping[str, JudgeCounts] = field(default_factory=dict)
    decided: int = 0
    agreement_sum: float = 0.0
    unanimous: int = 0

    def _total(self, name: str) -> int:
        return sum(getattr(counts, name) for counts in self.judges.values())

    @property
    def verdicts(self) -> int:
        """Verdicts asked of all the judges."""
        return self._total("verdicts")

    @property
    def parse_failure_rate(self) -> float | None:
        """Unreadable first replies / verdicts asked, over all the judges (0-1)."""
        asked = self.verdicts
        return self._total("unreadable") / asked if asked else None

    @property
    def reask_rate(self) -> float | None:
        """Re-asks / verdicts asked, over all the judges (0-1)."""
        asked = self.verdicts
        return self._total("reasked") / asked if asked else None

    @property
    def agreement(self) -> float | None:
        """The mean agreement of the rows several judges decided (0-1)."""
        return self.agreement_sum / self.decided if self.decided else None


class JudgeCounter:
    """Counts one judge strategy's rows from their ``judges`` metadata."""

    __slots__ = ("agreement_sum", "decided", "judges", "unanimous")

    def __init__(self) -> None:
        self.judges: dict[str, list[int]] = {}
        self.decided = 0
        self.agreement_sum = 0.0
        self.unanimous = 0

    def add(self, row: EvaluationRow, records: list[Any]) -> None:
        """Count one judge row."""
        metadata = row.metadata
        value = metadata.get("agreement")
        panel = isinstance(value, int | float) and not isinstance(value, bool)
        decided = row.outcome is Outcome.PASSED or row.outcome is Outcome.FAILED
        if panel and decided:
            agreement = float(value)  # type: ignore[arg-type]
            self.decided += 1
            self.agreement_sum += agreement
            self.unanimous += agreement >= 1.0
        for record in records:
            if not isinstance(record, Mapping):
                continue
            name = str(record.get("judge", "judge"))
            counts = self.judges.get(name)
            if counts is None:
                counts = self.judges[name] = [0] * len(_COUNT_FIELDS)
            verdict = record.get("verdict")
            counts[0] += 1
            counts[1] += bool(record.get("unreadable"))
            counts[2] += bool(record.get("reasked"))
            counts[3] += verdict == "unscored"
            counts[4] += verdict == "error"
            counts[5] += bool(record.get("cut_off"))
            counts[6] += bool(record.get("salvaged"))
            if panel and decided and verdict in ("passed", "failed"):
                counts[7] += 1
                counts[8] += (verdict == "passed") == (row.outcome is Outcome.PASSED)

    def absorb(self, other: JudgeCounter) -> None:
        """Add another counter's rows."""
        for name, counts in other.judges.items():
            mine = self.judges.setdefault(name, [0] * len(_COUNT_FIELDS))
            for index, value in enumerate(counts):
                mine[index] += value
        self.decided += other.decided
        self.agreement_sum += other.agreement_sum
        self.unanimous += other.unanimous

    def freeze(self) -> JudgeStatistics:
        """The counts as a value."""
        return JudgeStatistics(
            judges={
                name: JudgeCounts(**dict(zip(_COUNT_FIELDS, counts, strict=True)))
                for name, counts in self.judges.items()
            },
            decided=self.decided,
            agreement_sum=self.agreement_sum,
            unanimous=self.unanimous,
        )


JUDGE_COLUMNS = (
    "strategy",
    "judge",
    "verdicts",
    "parse failures",
    "re-asks",
    "unscored",
    "errors",
    "cut off",
    "salvaged",
    "agreement",
)
"""The columns of the judges table every format shows."""


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.2f}%)" if total else str(count)


def judge_rows(statistics: Mapping[str, JudgeStatistics]) -> list[tuple[str, ...]]:
    """The judges table: one row per judge of each judge strategy (see ``JUDGE_COLUMNS``)."""
    rows: list[tuple[str, ...]] = []
    for strategy, stats in statistics.items():
        for judge, c in stats.judges.items():
            agreement = c.agreement
            rows.append(
                (
                    strategy,
                    judge,
                    str(c.verdicts),
                    _share(c.unreadable, c.verdicts),
                    _share(c.reasked, c.verdicts),
                    _share(c.unscored, c.verdicts),
                    str(c.errors),
                    str(c.cut_off),
                    str(c.salvaged),
                    "—" if agreement is None else f"{100 * agreement:.2f}%",
                )
            )
    return rows


def panel_line(strategy: str, stats: JudgeStatistics) -> str | None:
    """``panel: the judges agree on 87.50% of each row on average; 5 of 8 rows unanimous``
    for a strategy with several judges, else ``None``."""
    agreement = stats.agreement
    if agreement is None:
        return None
    return (
        f"{strategy}: {len(stats.judges)} judges agree with the decision on "
        f"{100 * agreement:.2f}% of each row on average; {stats.unanimous} of "
        f"{stats.decided} rows unanimous"
    )


def calibrate(report: EvaluationReport, strategy: str | None = None) -> Calibration:
    """How one strategy's verdicts agree with the samples' human labels.

    Label samples with ``label: pass`` or ``label: fail`` (or a human score between 0 and 1)
    in the sample file, or ``metadata={"label": "pass"}`` in Python; every strategy's rows
    of labelled samples are counted as the run goes, so this reads the report's counts
    (also those of a report that does not hold every row).

    Example::

        calibration = aeval.calibrate(report, strategy="judge")
        print(calibration.describe())  # kappa 0.71 [0.52, 0.90] · accuracy 86.00% over 50 rows
        assert calibration.kappa is not None and calibration.kappa >= 0.6

    Args:
        report: The report of a run over labelled samples.
        strategy: The strategy's name; may be left out when one strategy has labelled rows.

    Raises:
        ValueError: No sample has a label, the strategy has no labelled rows, or several
            strategies have and none was named.
    """
    found = report.calibration
    if not found:
        raise ValueError(
            "no evaluated sample has a label: add `label: pass` or `label: fail` to the "
            'samples (metadata={"label": "pass"} in Python) to compare the verdicts with them'
        )
    if strategy is None:
        if len(found) > 1:
            raise ValueError(
                f"several strategies have labelled rows ({', '.join(found)}): name one with "
                "strategy=..."
            )
        return next(iter(found.values()))
    if strategy not in found:
        raise ValueError(
            f"the strategy {strategy!r} has no labelled rows (strategies with some: "
            f"{', '.join(found)})"
        )
    return found[strategy]
