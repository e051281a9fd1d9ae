"""The values a report is made of: statistics per tag, strategy and repeat, model usage, and
the parts the aggregator hands to :meth:`EvaluationReport.from_parts`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .._util._stats import ClusteredMean
from ._judging import Calibration, JudgeStatistics
from ._results import EvaluationRow, Outcome
from ._run_info import RunInfo

__all__ = [
    "FlakyCase",
    "ModelUsage",
    "RepeatStatistics",
    "ReportParts",
    "StrategyStatistics",
    "TagStatistics",
    "USER_MODEL_KEY",
    "percent_interval",
    "rule_score",
]


def percent_interval(moments: ClusteredMean, confidence: float) -> tuple[float, float]:
    """The confidence interval of a clustered mean of 0/1 scores, in percent."""
    low, high = moments.interval(confidence)
    return (100.0 * low, 100.0 * high)


def rule_score(passed: int, rows: int, not_applicable: int, moments: ClusteredMean) -> float:
    """The score of some rows, in percent: the mean over samples of each sample's passed rows
    / applicable rows, every sample weighing its rows (so all alike in a run, where each
    has one row per strategy and repeat); a sample with no applicable row is left out.

    Without not-applicable rows that is 100 × passed / rows, computed as such (0.0 when
    empty); with them it is read from ``moments``, whose clusters carry that rule
    (``aeval._reporting._counters.add_cluster``).
    """
    if not not_applicable:
        return 100.0 * passed / rows if rows else 0.0
    return 100.0 * moments.total / moments.rows if moments.rows else 0.0


USER_MODEL_KEY = "user_model"
"""The row metadata key of the user model's usage over one simulated conversation."""


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What model calls made by strategies, and by simulated users, cost over a run.

    Strategies report it per row in their result metadata under the keys ``retries``,
    ``prompt_tokens``, ``completion_tokens`` and ``cost``; the user model of simulated
    conversations under ``user_model`` (its ``calls``, ``prompt_tokens``,
    ``completion_tokens`` and ``retries``); the aggregator sums them. ``user_model_calls``
    counts the user model's calls (its tokens are in the totals).
    """

    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    user_model_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class TagStatistics:
    """Counts for the rows whose sample carries one tag.

    Attributes:
        total: Rows of samples with the tag.
        passed: Those that passed.
        moments: The sums behind the score and the interval (samples are the clusters).
        not_applicable: Rows whose strategy's expectation the sample does not state.
    """

    total: int
    passed: int
    moments: ClusteredMean = field(default_factory=ClusteredMean, compare=False)
    not_applicable: int = 0

    @property
    def score(self) -> float:
        """The report's score rule over these rows: 100 × passed / total without
        not-applicable rows, else the mean over samples of passed / applicable rows (0.0
        when empty)."""
        return rule_score(self.passed, self.total, self.not_applicable, self.moments)

    @property
    def samples(self) -> int:
        """Samples carrying the tag."""
        return self.moments.clusters

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The interval of :attr:`score` in percent (as ``report.confidence_interval``)."""
        return percent_interval(self.moments, confidence)


@dataclass(frozen=True, slots=True)
class StrategyStatistics:
    """Counts and the mean 0-1 score of one strategy's rows.

    Attributes:
        total: Rows of this strategy.
        passed: Passed rows.
        failed: Failed rows.
        unscored: Rows with no verdict.
        errors: Rows where the strategy raised, or could not run because the call failed.
        score_sum: The sum of the scored rows' 0-1 scores.
        scored: Rows with a verdict and a score (passed or failed).
        skipped: Rows whose strategy did not run because a check it depends on failed.
        moments: The sums behind the score and the interval (samples are the clusters).
        not_applicable: Rows whose sample does not state the strategy's expectation.
    """

    total: int
    passed: int
    failed: int
    unscored: int
    errors: int
    score_sum: float
    scored: int
    skipped: int = 0
    moments: ClusteredMean = field(default_factory=ClusteredMean, compare=False)
    not_applicable: int = 0

    @property
    def score(self) -> float:
        """The report's score rule over this strategy's rows: 100 × passed / total without
        not-applicable rows, else passed / applicable rows per sample, averaged over the
        samples with one (0.0 when empty)."""
        return rule_score(self.passed, self.total, self.not_applicable, self.moments)

    @property
    def applicable(self) -> int:
        """Rows the score is over: every row but the not-applicable ones."""
        return self.total - self.not_applicable

    @property
    def mean_score(self) -> float | None:
        """The mean 0-1 score of the scored rows, ``None`` when none was scored."""
        return self.score_sum / self.scored if self.scored else None

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The interval of :attr:`score` in percent (as ``report.confidence_interval``)."""
        return percent_interval(self.moments, confidence)


@dataclass(frozen=True, slots=True)
class FlakyCase:
    """A (sample, strategy) pair whose repeats disagree: some passed, some did not.

    Attributes:
        sample: The sample's name.
        strategy: The strategy's name (``None`` in a run without strategies).
        passed: Repeats that passed.
        runs: Repeats made.
    """

    sample: str
    strategy: str | None
    passed: int
    runs: int

    @property
    def pass_rate(self) -> float:
        """Passed repeats / repeats, in percent."""
        return 100.0 * self.passed / self.runs if self.runs else 0.0


@dataclass(frozen=True, slots=True)
class RepeatStatistics:
    """What repeating each sample tells (a run with ``repeats > 1``).

    Attributes:
        repeats: Runs per sample.
        pairs: (sample, strategy) pairs evaluated.
        flaky: The pairs whose repeats disagree.
        pass_at_k: For k = 1..repeats, the mean over pairs of the unbiased chance that at least
            one of k runs passes, 1 − C(n−c, k) / C(n, k) (n runs, c passed).
        pass_hat_k: The same for all k runs passing (pass^k), C(c, k) / C(n, k).
        output_agreement: The mean over samples of the share of repeats whose output equals
            the most common output after whitespace and case normalisation (``None`` when
            no sample ran twice).
        inconsistent: The samples whose outputs disagree, with their agreement (0-1).
    """

    repeats: int
    pairs: int
    flaky: tuple[FlakyCase, ...]
    pass_at_k: Mapping[int, float]
    pass_hat_k: Mapping[int, float]
    output_agreement: float | None
    inconsistent: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportParts:
    """Everything a report holds, counted once (by the aggregator or read from report.json).

    Attributes:
        rows: The rows held, in sample then strategy order.
        counts: Rows per outcome.
        tags: Statistics per tag.
        strategies: Statistics per strategy.
        function_errors: Calls of the function under test that failed.
        calls: Calls of the function under test (one per sample and repeat).
        samples: Samples evaluated.
        moments: The clustered mean of the rows' 0/1 scores.
        run: The run's header.
        holds_all_rows: Whether ``rows`` holds every row, not only the failures.
        usage: What the strategies' model calls cost.
        repeats: Statistics over repeats, when a sample ran more than once.
        calibration: Judge calibration per strategy.
        judges: Judge statistics per strategy.
        call_time: The summed durations of the calls (the duration of a report without a
            start and finish time).
        conversations: Conversations per ending (``script``, ``goal``, ``max-turns``,
            ``error``, ``timeout``); empty without conversation samples.
    """

    rows: tuple[EvaluationRow, ...]
    counts: Mapping[Outcome, int]
    tags: Mapping[str, TagStatistics]
    strategies: Mapping[str, StrategyStatistics]
    function_errors: int
    calls: int
    samples: int
    moments: ClusteredMean
    run: RunInfo
    holds_all_rows: bool
    usage: ModelUsage
    repeats: RepeatStatistics | None
    calibration: Mapping[str, Calibration] = field(default_factory=dict)
    judges: Mapping[str, JudgeStatistics] = field(default_factory=dict)
    call_time: float = 0.0
    conversations: Mapping[str, int] = field(default_factory=dict)
