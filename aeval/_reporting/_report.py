"""The evaluation report and the statistics it is made of."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util._stats import ClusteredMean
from ._judging import Calibration, JudgeStatistics
from ._results import EvaluationRow, Outcome
from ._run_info import RunInfo

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EvaluationReport",
    "FlakyCase",
    "ModelUsage",
    "RepeatStatistics",
    "StrategyStatistics",
    "TagStatistics",
    "partial_note",
]


def _interval(moments: ClusteredMean, confidence: float) -> tuple[float, float]:
    low, high = moments.interval(confidence)
    return (100.0 * low, 100.0 * high)


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What model calls made by strategies cost over a run.

    Strategies report it per row in their result metadata under the keys ``retries``,
    ``prompt_tokens``, ``completion_tokens`` and ``cost``; the aggregator sums them.
    """

    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

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
        moments: The sums behind the interval (samples are the clusters).
    """

    total: int
    passed: int
    moments: ClusteredMean = field(default_factory=ClusteredMean, compare=False)

    @property
    def score(self) -> float:
        """100 × passed / total, 0.0 when empty."""
        return 100.0 * self.passed / self.total if self.total else 0.0

    @property
    def samples(self) -> int:
        """Samples carrying the tag."""
        return self.moments.clusters

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The interval of :attr:`score` in percent (as ``report.confidence_interval``)."""
        return _interval(self.moments, confidence)


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
        moments: The sums behind the interval (samples are the clusters).
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

    @property
    def score(self) -> float:
        """100 × passed / total, 0.0 when empty (the same formula as the report's score)."""
        return 100.0 * self.passed / self.total if self.total else 0.0

    @property
    def mean_score(self) -> float | None:
        """The mean 0-1 score of the scored rows, ``None`` when none was scored."""
        return self.score_sum / self.scored if self.scored else None

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The interval of :attr:`score` in percent (as ``report.confidence_interval``)."""
        return _interval(self.moments, confidence)


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


class EvaluationReport:
    """The outcome of an evaluation run.

    ``score`` is 100 × passed rows / rows (0.0 when empty). Every (sample, repeat, strategy)
    is exactly one row, so every sample weighs the same; error, unscored and skipped rows count
    as not passed. Rows are in sample order, then strategy order, whatever the completion order.

    A report can be built from rows directly: ``EvaluationReport(rows)``.
    """

    __slots__ = (
        "_calibration",
        "_call_time",
        "_calls",
        "_counts",
        "_function_errors",
        "_holds_all_rows",
        "_judges",
        "_moments",
        "_repeats",
        "_rows",
        "_run",
        "_samples",
        "_strategies",
        "_tags",
        "_usage",
    )

    _rows: tuple[EvaluationRow, ...]
    _counts: Mapping[Outcome, int]
    _tags: Mapping[str, TagStatistics]
    _strategies: Mapping[str, StrategyStatistics]
    _function_errors: int
    _calls: int
    _samples: int
    _call_time: float
    _moments: ClusteredMean
    _run: RunInfo
    _holds_all_rows: bool
    _usage: ModelUsage
    _repeats: RepeatStatistics | None
    _calibration: Mapping[str, Calibration]
    _judges: Mapping[str, JudgeStatistics]

    def __init__(self, rows: Iterable[EvaluationRow] = (), *, run: RunInfo | None = None) -> None:
        from ._aggregator import Aggregator

        aggregator = Aggregator()
        calls: dict[tuple[int, int], EvaluationRow] = {}
        for row in rows:
            aggregator.add(row)
            calls.setdefault((row.index, row.repeat), row)
        report = aggregator.report()
        for name in EvaluationReport.__slots__:
            setattr(self, name, getattr(report, name))
        self._calls = len(calls)
        self._samples = len({index for index, _ in calls})
        self._function_errors = sum(row.function_failed for row in calls.values())
        self._call_time = sum(row.duration for row in calls.values())
        self._run = run if run is not None else RunInfo(repeats=max(1, self._repeats_seen()))

    def _repeats_seen(self) -> int:
        return self._repeats.repeats if self._repeats is not None else 1

    @classmethod
    def _from_parts(
        cls,
        *,
        rows: tuple[EvaluationRow, ...],
        counts: Mapping[Outcome, int],
        tags: Mapping[str, TagStatistics],
        strategies: Mapping[str, StrategyStatistics],
        function_errors: int,
        calls: int,
        samples: int,
        moments: ClusteredMean,
        run: RunInfo,
        holds_all_rows: bool,
        usage: ModelUsage,
        repeats: RepeatStatistics | None,
        calibration: Mapping[str, Calibration] | None = None,
        judges: Mapping[str, JudgeStatistics] | None = None,
    ) -> EvaluationReport:
        report = object.__new__(cls)
        report._rows = rows
        report._counts = counts
        report._tags = tags
        report._strategies = strategies
        report._function_errors = function_errors
        report._calls = calls
        report._samples = samples
        report._call_time = 0.0
        report._moments = moments
        report._run = run
        report._holds_all_rows = holds_all_rows
        report._usage = usage
        report._repeats = repeats
        report._calibration = dict(calibration or {})
        report._judges = dict(judges or {})
        return report

    def with_run(self, run: RunInfo) -> EvaluationReport:
        """A copy of this report with another header (e.g. one read back from a file)."""
        clone = object.__new__(EvaluationReport)
        for name in EvaluationReport.__slots__:
            setattr(clone, name, getattr(self, name))
        clone._run = run
        return clone

    # -- counts and scores -------------------------------------------------------------------

    @property
    def score(self) -> float:
        """100 × passed rows / rows, 0.0 for an empty report."""
        total = self.evaluation_count
        return 100.0 * self._counts[Outcome.PASSED] / total if total else 0.0

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The interval of :attr:`score`, in percent, treating each sample as a cluster.

        The rows of one sample (its strategies and repeats) are not independent, so the
        standard error is clustered by sample (Miller, arXiv 2411.00640) with the
        C / (C − 1) small-sample correction. The interval is Wilson's score interval over
        the rows that clustering leaves (n / design effect; every row with one row per
        sample), so it is never narrower than Wilson's interval over the rows and keeps a
        width at 0 and 100 (see :mod:`aeval._util._stats`). With fewer than two samples it is
        [0, 100].

        Args:
            confidence: The coverage, strictly between 0 and 1.
        """
        return _interval(self._moments, confidence)

    @property
    def moments(self) -> ClusteredMean:
        """The sums behind :attr:`score` and its interval (mergeable, written to JSON)."""
        return self._moments

    @property
    def standard_error(self) -> float | None:
        """The clustered standard error of :attr:`score` in percentage points."""
        se = self._moments.standard_error
        return None if se is None else 100.0 * se

    @property
    def evaluation_count(self) -> int:
        """The number of rows."""
        return sum(self._counts.values())

    @property
    def passed_count(self) -> int:
        """Rows that passed."""
        return self._counts[Outcome.PASSED]

    @property
    def failed_count(self) -> int:
        """Rows a strategy failed (errors, unscored and skipped rows are counted apart)."""
        return self._counts[Outcome.FAILED]

    @property
    def not_passed_count(self) -> int:
        """Rows that did not pass: failed, unscored, skipped and errors together."""
        return self.evaluation_count - self.passed_count

    @property
    def error_count(self) -> int:
        """Error rows: a strategy raised, or the call it needed failed."""
        return self._counts[Outcome.ERROR]

    @property
    def function_error_count(self) -> int:
        """Calls of the function under test that raised or timed out (samples × repeats)."""
        return self._function_errors

    @property
    def unscored_count(self) -> int:
        """Rows where a strategy could not reach a verdict."""
        return self._counts[Outcome.UNSCORED]

    @property
    def skipped_count(self) -> int:
        """Rows whose strategy did not run because a check it depends on failed."""
        return self._counts[Outcome.SKIPPED]

    @property
    def sample_count(self) -> int:
        """Distinct samples evaluated (each counted once, whatever its repeats and rows)."""
        return self._samples

    @property
    def call_count(self) -> int:
        """Calls of the function under test (samples × repeats run)."""
        return self._calls

    @property
    def counts(self) -> Mapping[Outcome, int]:
        """Rows per outcome."""
        return dict(self._counts)

    def score_for_tag(self, tag: str) -> float:
        """The score over the rows whose sample carries ``tag`` (0.0 when none does)."""
        stats = self._tags.get(tag)
        return stats.score if stats is not None else 0.0

    @property
    def tag_scores(self) -> dict[str, float]:
        """Score per tag, in order of first appearance."""
        return {tag: stats.score for tag, stats in self._tags.items()}

    @property
    def tag_statistics(self) -> Mapping[str, TagStatistics]:
        """Row counts and intervals per tag, in order of first appearance."""
        return dict(self._tags)

    @property
    def strategy_scores(self) -> dict[str, float]:
        """Score (100 × passed / rows) per strategy name, in order of first appearance."""
        return {name: stats.score for name, stats in self._strategies.items()}

    @property
    def strategy_statistics(self) -> Mapping[str, StrategyStatistics]:
        """Counts, mean 0-1 score and interval per strategy."""
        return dict(self._strategies)

    @property
    def usage(self) -> ModelUsage:
        """Retries, tokens and cost of the strategies' model calls, summed over every row."""
        return self._usage

    @property
    def calibration(self) -> Mapping[str, Calibration]:
        """Per strategy with labelled rows, its verdicts against the human labels.

        Samples carry a label as ``label: pass`` / ``label: fail`` (or a human score between
        0 and 1) in sample files, ``metadata={"label": ...}`` in Python. See
        :func:`aeval.calibrate`.
        """
        return dict(self._calibration)

    @property
    def judge_statistics(self) -> Mapping[str, JudgeStatistics]:
        """Per judge strategy: parse failures, re-asks, cut-off replies and, with several
        judges, their agreement."""
        return dict(self._judges)

    # -- the run ------------------------------------------------------------------------------

    @property
    def run(self) -> RunInfo:
        """The header: start and end, settings, commit, whether the run completed."""
        return self._run

    @property
    def complete(self) -> bool:
        """Whether the run went through every sample (``False`` for a stopped run, and for
        one with fewer samples than its source held)."""
        expected = self._run.samples_expected
        return self._run.complete and (expected is None or self._samples >= expected)

    @property
    def samples_expected(self) -> int | None:
        """The samples the run's source held, when it had a length."""
        return self._run.samples_expected

    @property
    def started_at(self) -> float | None:
        """When the run started (a Unix timestamp), if known."""
        return self._run.started_at

    @property
    def finished_at(self) -> float | None:
        """When the run ended (a Unix timestamp), if it did."""
        return self._run.finished_at

    @property
    def duration(self) -> float:
        """Wall-clock seconds of the run (so far, for a live report).

        A report built from rows with no header (``EvaluationReport(rows)``) knows no wall
        clock: there it is the summed time of the function calls, one per sample and repeat.
        """
        run = self._run
        if run.started_at is None:
            return self._call_time
        end = run.finished_at if run.finished_at is not None else time.time()
        return max(0.0, end - run.started_at)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What went wrong around the evaluation (a sink that failed, …)."""
        return self._run.warnings

    # -- repeats ------------------------------------------------------------------------------

    @property
    def repeat_statistics(self) -> RepeatStatistics | None:
        """pass@k, pass^k, output agreement and flaky pairs; ``None`` without repeats."""
        return self._repeats

    @property
    def flaky(self) -> tuple[FlakyCase, ...]:
        """The (sample, strategy) pairs whose repeats disagree (empty without repeats)."""
        return self._repeats.flaky if self._repeats is not None else ()

    # -- rows ---------------------------------------------------------------------------------

    @property
    def evaluations(self) -> Sequence[EvaluationRow]:
        """The rows held, in sample order then strategy order.

        A report built with ``keep="failures"`` or ``keep="none"`` holds only those rows; the
        counts still cover every row (see :attr:`holds_all_rows`).
        """
        return self._rows

    @property
    def failures(self) -> list[EvaluationRow]:
        """The rows held that did not pass."""
        return [row for row in self._rows if not row.passed]

    @property
    def holds_all_rows(self) -> bool:
        """Whether every row is held in :attr:`evaluations` (``keep="all"``)."""
        return self._holds_all_rows

    @property
    def tags(self) -> tuple[str, ...]:
        """Every tag seen, in order of first appearance."""
        return tuple(self._tags)

    def __len__(self) -> int:
        return self.evaluation_count

    def __repr__(self) -> str:
        partial = "" if self.complete else " partial"
        return (
            f"<EvaluationReport{partial} score={self.score:.2f}% rows={self.evaluation_count} "
            f"passed={self.passed_count} failed={self.failed_count} "
            f"unscored={self.unscored_count} errors={self.error_count}>"
        )

    # -- output -------------------------------------------------------------------------------

    def format(self, format: str = "markdown", **options: Any) -> str:
        """Render the report with a registered formatter (``"markdown"``, ``"json"``, …)."""
        from ..formatters import get_formatter

        rendered = get_formatter(format).format(self, **options)
        return rendered if isinstance(rendered, str) else rendered.decode()

    def print(self, console: Console | None = None) -> None:
        """Print the summary ``aeval run`` prints (score and interval, tables, failures).

        Args:
            console: A rich ``Console`` to print on (default: a new one on standard output).
        """
        from .._summary import print_report

        print_report(self, console=console)

    async def save(
        self,
        directory: str | PathLike[str],
        *,
        formats: Iterable[str] | None = None,
        **options: Any,
    ) -> list[Path]:
        """Write ``report.<ext>`` for each format into ``directory`` (created if needed).

        Args:
            directory: Where to write.
            formats: Format names; every registered format when omitted.
            **options: Passed to each formatter (e.g. ``include_details=False``).

        Returns:
            The paths written.
        """
        from ..formatters import save_report

        return await save_report(self, Path(directory), formats=formats, options=options)

    async def save_as(
        self, path: str | PathLike[str], format: str | None = None, **options: Any
    ) -> Path:
        """Write one file; the format defaults to the one matching the file's extension."""
        from ..formatters import save_report_as

        return await save_report_as(self, Path(path), format, options=options)


def partial_note(report: EvaluationReport) -> str | None:
    """``run stopped after 12 of 40 samples`` for a partial report, else ``None``."""
    if report.complete:
        return None
    expected = report.samples_expected
    of = f" of {expected}" if expected is not None else ""
    return f"run stopped after {report.sample_count}{of} samples"
