"""The evaluation report and the statistics it is made of."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util._stats import ClusteredMean
from ._aggregator import RowAggregator
from ._judging import Calibration, JudgeStatistics
from ._results import EvaluationRow, Outcome
from ._run_info import RunInfo
from ._values import (
    FlakyCase,
    ModelUsage,
    RepeatStatistics,
    ReportParts,
    StrategyStatistics,
    TagStatistics,
    percent_interval,
    rule_score,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Aggregator", "EvaluationReport", "partial_note"]


class EvaluationReport:
    """The outcome of an evaluation run.

    ``score`` is 100 × passed rows / rows (0.0 when empty). Every (sample, repeat, strategy)
    is exactly one row, so every sample weighs the same; error, unscored and skipped rows count
    as not passed. A *not applicable* row (a strategy whose expectation the sample does not
    state) neither passes nor fails: the score is then the mean over samples of each sample's
    passed rows / applicable rows, so every sample still weighs the same, and a sample whose
    rows are all not applicable is left out of it (:attr:`not_applicable_count` counts those
    rows). Rows are in sample order, then strategy order, whatever the completion order.

    A report can be built from rows directly: ``EvaluationReport(rows)``.
    """

    __slots__ = ("_parts",)

    _parts: ReportParts

    def __init__(self, rows: Iterable[EvaluationRow] = (), *, run: RunInfo | None = None) -> None:
        aggregator = RowAggregator()
        calls: dict[tuple[int, int], EvaluationRow] = {}
        samples: set[int] = set()
        for row in rows:
            aggregator.add(row)
            if (row.index, row.repeat) not in calls:
                calls[row.index, row.repeat] = row
                aggregator.count_sample(
                    repeat=int(row.index in samples), failed=row.function_failed
                )
                samples.add(row.index)
        parts = aggregator.parts()
        if run is None:
            run = RunInfo(repeats=max(1, parts.repeats.repeats if parts.repeats else 1))
        self._fill(replace(parts, run=run, call_time=sum(row.duration for row in calls.values())))

    @classmethod
    def from_parts(cls, parts: ReportParts) -> EvaluationReport:
        """The report of ``parts``, counted elsewhere.

        An :class:`Aggregator` counts them as rows arrive; ``report_from_json`` reads them
        back from ``report.json``. ``EvaluationReport(rows)`` counts ``rows`` and comes here.
        """
        report = object.__new__(cls)
        report._fill(parts)
        return report

    def _fill(self, parts: ReportParts) -> None:
        self._parts = replace(
            parts,
            calibration=dict(parts.calibration),
            judges=dict(parts.judges),
            conversations=dict(parts.conversations),
        )

    def with_run(self, run: RunInfo) -> EvaluationReport:
        """A copy of this report with another header (e.g. one read back from a file)."""
        return EvaluationReport.from_parts(replace(self._parts, run=run))

    # -- counts and scores -------------------------------------------------------------------

    @property
    def score(self) -> float:
        """100 × passed rows / rows, 0.0 for an empty report; with not-applicable rows, the
        mean over samples of passed / applicable rows (see the class)."""
        return rule_score(
            self._parts.counts[Outcome.PASSED],
            self.evaluation_count,
            self._parts.counts.get(Outcome.NOT_APPLICABLE, 0),
            self._parts.moments,
        )

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
        return percent_interval(self._parts.moments, confidence)

    @property
    def moments(self) -> ClusteredMean:
        """The sums behind :attr:`score` and its interval (mergeable, written to JSON)."""
        return self._parts.moments

    @property
    def standard_error(self) -> float | None:
        """The clustered standard error of :attr:`score` in percentage points."""
        se = self._parts.moments.standard_error
        return None if se is None else 100.0 * se

    @property
    def evaluation_count(self) -> int:
        """The number of rows."""
        return sum(self._parts.counts.values())

    @property
    def passed_count(self) -> int:
        """Rows that passed."""
        return self._parts.counts[Outcome.PASSED]

    @property
    def failed_count(self) -> int:
        """Rows a strategy failed (errors, unscored and skipped rows are counted apart)."""
        return self._parts.counts[Outcome.FAILED]

    @property
    def not_passed_count(self) -> int:
        """Rows that did not pass: failed, unscored, skipped and errors together (a
        not-applicable row neither passed nor failed)."""
        return self.evaluation_count - self.passed_count - self.not_applicable_count

    @property
    def not_applicable_count(self) -> int:
        """Rows whose strategy's expectation the sample does not state: neither passed nor
        failed, and left out of the score."""
        return self._parts.counts.get(Outcome.NOT_APPLICABLE, 0)

    @property
    def inapplicable_sample_count(self) -> int:
        """Samples none of whose rows applies: left out of the score's denominator."""
        if not self.not_applicable_count:
            return 0
        return max(0, self._parts.samples - self._parts.moments.clusters)

    @property
    def applicable_count(self) -> int:
        """Rows the score is over: every row but the not-applicable ones."""
        return self.evaluation_count - self.not_applicable_count

    @property
    def error_count(self) -> int:
        """Error rows: a strategy raised, or the call it needed failed."""
        return self._parts.counts[Outcome.ERROR]

    @property
    def function_error_count(self) -> int:
        """Calls of the function under test that raised or timed out (samples × repeats)."""
        return self._parts.function_errors

    @property
    def unscored_count(self) -> int:
        """Rows where a strategy could not reach a verdict."""
        return self._parts.counts[Outcome.UNSCORED]

    @property
    def skipped_count(self) -> int:
        """Rows whose strategy did not run because a check it depends on failed."""
        return self._parts.counts[Outcome.SKIPPED]

    @property
    def sample_count(self) -> int:
        """Distinct samples evaluated (each counted once, whatever its repeats and rows)."""
        return self._parts.samples

    @property
    def call_count(self) -> int:
        """Calls of the function under test (samples × repeats run)."""
        return self._parts.calls

    @property
    def counts(self) -> Mapping[Outcome, int]:
        """Rows per outcome."""
        return dict(self._parts.counts)

    def score_for_tag(self, tag: str) -> float:
        """The score over the rows whose sample carries ``tag`` (0.0 when none does)."""
        stats = self._parts.tags.get(tag)
        return stats.score if stats is not None else 0.0

    @property
    def tag_scores(self) -> dict[str, float]:
        """Score per tag, in order of first appearance."""
        return {tag: stats.score for tag, stats in self._parts.tags.items()}

    @property
    def tag_statistics(self) -> Mapping[str, TagStatistics]:
        """Row counts and intervals per tag, in order of first appearance."""
        return dict(self._parts.tags)

    @property
    def strategy_scores(self) -> dict[str, float]:
        """Score (100 × passed / rows) per strategy name, in order of first appearance."""
        return {name: stats.score for name, stats in self._parts.strategies.items()}

    @property
    def strategy_statistics(self) -> Mapping[str, StrategyStatistics]:
        """Counts, mean 0-1 score and interval per strategy."""
        return dict(self._parts.strategies)

    @property
    def usage(self) -> ModelUsage:
        """Retries, tokens and cost of the strategies' model calls, summed over every row."""
        return self._parts.usage

    @property
    def conversations(self) -> Mapping[str, int]:
        """Conversations (sample and repeat) per ending: ``script`` (the script ran out),
        ``goal`` and ``max-turns`` (a simulated user stopped), ``error`` and ``timeout``;
        empty without conversation samples. The user model's calls and tokens are in
        :attr:`usage`."""
        return self._parts.conversations

    @property
    def calibration(self) -> Mapping[str, Calibration]:
        """Per strategy with labelled rows, its verdicts against the human labels.

        Samples carry a label as ``label: pass`` / ``label: fail`` (or a human score between
        0 and 1) in sample files, ``metadata={"label": ...}`` in Python. See
        :func:`aeval.calibrate`.
        """
        return dict(self._parts.calibration)

    @property
    def judge_statistics(self) -> Mapping[str, JudgeStatistics]:
        """Per judge strategy: parse failures, re-asks, cut-off replies and, with several
        judges, their agreement."""
        return dict(self._parts.judges)

    # -- the run ------------------------------------------------------------------------------

    @property
    def run(self) -> RunInfo:
        """The header: start and end, settings, commit, whether the run completed."""
        return self._parts.run

    @property
    def complete(self) -> bool:
        """Whether the run went through every sample (``False`` for a stopped run, and for
        one with fewer samples than its source held)."""
        expected = self._parts.run.samples_expected
        return self._parts.run.complete and (expected is None or self._parts.samples >= expected)

    @property
    def samples_expected(self) -> int | None:
        """The samples the run's source held, when it had a length."""
        return self._parts.run.samples_expected

    @property
    def started_at(self) -> float | None:
        """When the run started (a Unix timestamp), if known."""
        return self._parts.run.started_at

    @property
    def finished_at(self) -> float | None:
        """When the run ended (a Unix timestamp), if it did."""
        return self._parts.run.finished_at

    @property
    def duration(self) -> float | None:
        """Wall-clock seconds of the run, from its recorded start to its recorded finish.

        ``None`` when the run has a start but no finish: a live report, or the rows of a
        run that was killed. The duration comes from recorded times only, never from the
        clock, so a report renders the same on any date. A report built from rows with no
        header (``EvaluationReport(rows)``) knows no wall clock: there it is the summed time
        of the function calls, one per sample and repeat.
        """
        run = self._parts.run
        if run.started_at is None:
            return self._parts.call_time
        return run.duration

    @property
    def warnings(self) -> tuple[str, ...]:
        """What went wrong around the evaluation (a sink that failed, …)."""
        return self._parts.run.warnings

    # -- repeats ------------------------------------------------------------------------------

    @property
    def repeat_statistics(self) -> RepeatStatistics | None:
        """pass@k, pass^k, output agreement and flaky pairs; ``None`` without repeats."""
        return self._parts.repeats

    @property
    def flaky(self) -> tuple[FlakyCase, ...]:
        """The (sample, strategy) pairs whose repeats disagree (empty without repeats)."""
        return self._parts.repeats.flaky if self._parts.repeats is not None else ()

    # -- rows ---------------------------------------------------------------------------------

    @property
    def evaluations(self) -> Sequence[EvaluationRow]:
        """The rows held, in sample order then strategy order.

        A report built with ``keep="failures"`` or ``keep="none"`` holds only those rows; the
        counts still cover every row (see :attr:`holds_all_rows`).
        """
        return self._parts.rows

    @property
    def failures(self) -> list[EvaluationRow]:
        """The rows held that did not pass (not-applicable rows are not failures)."""
        return [
            row
            for row in self._parts.rows
            if not row.passed and row.outcome is not Outcome.NOT_APPLICABLE
        ]

    @property
    def holds_all_rows(self) -> bool:
        """Whether every row is held in :attr:`evaluations` (``keep="all"``)."""
        return self._parts.holds_all_rows

    @property
    def tags(self) -> tuple[str, ...]:
        """Every tag seen, in order of first appearance."""
        return tuple(self._parts.tags)

    def __len__(self) -> int:
        return self.evaluation_count

    def __repr__(self) -> str:
        partial = "" if self.complete else " partial"
        return (
            f"<EvaluationReport{partial} score={self.score:.2f}% rows={self.evaluation_count} "
            f"passed={self.passed_count} failed={self.failed_count} "
            f"unscored={self.unscored_count} errors={self.error_count}"
            + (f" not_applicable={self.not_applicable_count}" if self.not_applicable_count else "")
            + ">"
        )

    # -- output -------------------------------------------------------------------------------

    def format(self, format: str = "markdown", **options: Any) -> str:
        """Render the report with a registered formatter (``"markdown"``, ``"json"``, …)."""
        from ..formatters._registry import render

        return render("report", format, self, **options)

    def print(self, console: Console | None = None) -> None:
        """Print the summary ``aeval run`` prints (score and interval, tables, failures).

        Args:
            console: A rich ``Console`` to print on (default: a new one on standard output).
        """
        from ..formatters._report_terminal import print_report

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
        from ..formatters._save import save_report

        return await save_report(self, Path(directory), formats=formats, options=options)

    async def save_as(
        self, path: str | PathLike[str], format: str | None = None, **options: Any
    ) -> Path:
        """Write one file; the format defaults to the one matching the file's extension."""
        from ..formatters._save import save_report_as

        return await save_report_as(self, Path(path), format, options=options)


class Aggregator(RowAggregator):
    """Builds a report from rows as they arrive, in O(1) work per row.

    Two aggregators over disjoint samples (shards of a run) merge (:meth:`merge`) into the same
    report as one aggregator over the whole run.

    Every score is a mean of 0/1 rows whose interval treats the rows of one sample as a
    cluster. To keep memory bounded the aggregator closes a sample once all its rows have
    arrived, which it can tell when it knows how many to expect (``strategies`` and
    ``repeats``, set by the Scorer); otherwise samples stay open until the report is made.

    Args:
        keep: Which rows to hold: ``"all"``, only the ``"failures"`` (rows that did not pass,
            not-applicable rows aside), or ``"none"``. Counts and scores always cover every
            row, so a run over millions of samples can keep memory bounded.
        strategies: Strategies per sample, when known (a run without strategies has one row
            per sample and repeat).
        repeats: Runs per sample, when known.
    """

    __slots__ = ()

    def report(self) -> EvaluationReport:
        """A snapshot of everything counted so far, rows in sample then strategy order."""
        return EvaluationReport.from_parts(self.parts())


def partial_note(report: EvaluationReport) -> str | None:
    """``run stopped after 12 of 40 samples`` for a partial report, else ``None``."""
    if report.complete:
        return None
    expected = report.samples_expected
    of = f" of {expected}" if expected is not None else ""
    return f"run stopped after {report.sample_count}{of} samples"
