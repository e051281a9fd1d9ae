"""The incremental aggregator: a report built from rows as they arrive, in O(1) per row."""

from __future__ import annotations

import time
from collections.abc import Mapping
from operator import attrgetter
from typing import Any, Literal, Self

from .._conversation import Transcript
from .._util._stats import MomentsCounter
from ._counters import (
    NOT_APPLICABLE,
    OpenPair,
    OpenSample,
    RepeatCounter,
    StrategyCounter,
    TagCounter,
    UsageCounter,
    add_cluster,
    count_row,
    output_key,
)
from ._judging import LABEL_KEY, CalibrationCounter, JudgeCounter
from ._results import EvaluationRow, Outcome
from ._run_info import RunInfo
from ._values import (
    ReportParts,
    TagStatistics,
)

__all__ = ["KeepRows", "RowAggregator"]

KeepRows = Literal["all", "failures", "none"]
_SORT_KEY = attrgetter("index", "repeat", "position")  # EvaluationRow.sort_key, in C
_PASSED = Outcome.PASSED
_FAILED = Outcome.FAILED


class RowAggregator:
    """The counting behind :class:`~aeval.Aggregator`, handed over as :class:`ReportParts`.

    Every statistic of a report is kept up to date in O(1) per row; ``Aggregator`` documents
    the arguments and adds ``report()``.
    """

    __slots__ = (
        "_calibration",
        "_calls",
        "_clusters",
        "_endings",
        "_finished",
        "_function_errors",
        "_in_order",
        "_judging",
        "_keep",
        "_keep_failed",
        "_keep_passed",
        "_last_index",
        "_moments",
        "_open",
        "_pairs",
        "_passes",
        "_repeat_stats",
        "_repeats",
        "_rows",
        "_rows_per_sample",
        "_run",
        "_samples",
        "_single_pairs",
        "_single_rows",
        "_started",
        "_strategies",
        "_tags",
        "_usage",
    )

    def __init__(
        self,
        *,
        keep: KeepRows = "all",
        strategies: int | None = None,
        repeats: int | None = None,
    ) -> None:
        if keep not in ("all", "failures", "none"):
            raise ValueError(f"keep must be 'all', 'failures' or 'none', got {keep!r}")
        self._keep: KeepRows = keep
        self._keep_passed = keep == "all"
        self._keep_failed = keep != "none"
        self._tags: dict[str, TagCounter] = {}
        self._strategies: dict[str | None, StrategyCounter] = {}
        self._function_errors = 0
        self._rows: list[EvaluationRow] = []
        self._calls = 0
        self._samples = 0
        self._started: float | None = None
        self._finished: float | None = None
        self._usage = UsageCounter()
        self._endings: dict[str, int] = {}
        self._calibration: dict[str, CalibrationCounter] = {}
        self._judging: dict[str, JudgeCounter] = {}
        self._moments = MomentsCounter()
        self._open: dict[int, OpenSample] = {}
        self._pairs: dict[tuple[int, str | None], OpenPair] = {}
        self._passes: dict[tuple[tuple[str, ...], str], list[Any]] = {}
        self._repeat_stats = RepeatCounter()
        self._repeats = repeats
        self._rows_per_sample = (
            None if strategies is None or repeats is None else max(1, strategies) * repeats
        )
        # one row per sample, or per (sample, strategy) pair: each row is a cluster of its
        # own, whose sums follow from the pass counts (see _closed), so nothing per row
        self._single_rows = self._rows_per_sample == 1
        # one row per sample: rows added with rising indexes are in report order already
        self._in_order = self._single_rows
        self._last_index = -1
        self._single_pairs = repeats == 1
        self._clusters = not (self._single_rows and self._single_pairs)
        self._run = RunInfo()

    @property
    def keep(self) -> KeepRows:
        """Which rows this aggregator holds."""
        return self._keep

    @property
    def rows_added(self) -> int:
        """Rows counted so far."""
        self._settle()
        return sum(counter.total for counter in self._strategies.values())

    def _outcome_counts(self) -> dict[Outcome, int]:
        """The rows of each outcome: the strategies' counts, summed (every row has one)."""
        self._settle()
        counts = dict.fromkeys(Outcome, 0)
        for counter in self._strategies.values():
            counts[_PASSED] += counter.passed
            counts[_FAILED] += counter.failed
            counts[Outcome.UNSCORED] += counter.unscored
            counts[Outcome.SKIPPED] += counter.skipped
            counts[Outcome.ERROR] += counter.errors
            counts[NOT_APPLICABLE] += counter.not_applicable
        return counts

    @property
    def run_info(self) -> RunInfo:
        """The run's header as it stands (start, end once finished, completeness)."""
        return self._run.replace(
            started_at=self._started,
            finished_at=self._finished,
            complete=self._run.complete and self._finished is not None,
        )

    def start(self, run: RunInfo | None = None) -> None:
        """Mark the start of the run (wall clock) and record its header."""
        if run is not None:
            self._run = run
        if self._started is None:
            self._started = run.started_at if run and run.started_at else time.time()

    def finish(
        self,
        *,
        complete: bool = True,
        warnings: tuple[str, ...] = (),
        finished_at: float | None = None,
    ) -> None:
        """Mark the end of the run: its wall clock, whether it went through every sample.

        A run whose source had a length is complete only with every call of every sample
        counted: whatever stopped a worker early, a report short of samples never says
        ``complete``.
        """
        self._finished = finished_at if finished_at is not None else time.time()
        if complete and (short := self.shortfall()) is not None:
            complete = False
            warnings = (*warnings, short)
        self._run = self._run.replace(complete=complete, warnings=(*self._run.warnings, *warnings))

    def shortfall(self) -> str | None:
        """What is missing when fewer calls were counted than the run's source expected."""
        expected = self._run.samples_expected
        if expected is None:
            return None
        calls = expected * (self._repeats or self._run.repeats)
        if self._samples >= expected and self._calls >= calls:
            return None
        return (
            f"only {self._calls} of the {calls} calls expected were evaluated "
            f"({self._samples} of {expected} samples): the run is not complete"
        )

    def count_sample(self, *, repeat: int = 0, failed: bool = False) -> None:
        """Count one call of the function under test.

        Args:
            repeat: Which repeat of its sample the call was (repeat 0 counts the sample).
            failed: The call raised or timed out.
        """
        self._calls += 1
        self._samples += repeat == 0
        if failed:
            self._function_errors += 1

    @property
    def rowless(self) -> bool:
        """Whether a passing row may be counted without being made (:meth:`count_passed`):
        one row per sample and per (sample, strategy) pair, and passing rows not kept."""
        return not self._clusters and not self._keep_passed

    def count_passed(self, tags: tuple[str, ...], strategy: str, score: float) -> None:
        """What :meth:`add` does for a passing row, without the row, when :attr:`rowless`
        and the row has no metadata, its sample none and its output is no transcript.

        The rows are noted per (tags, strategy) and counted together by :func:`count_row`
        before any read (:meth:`_settle`): no Python call per row.
        """
        key = (tags, strategy)
        pending = self._passes.get(key)
        if pending is None:
            pending = self._passes[key] = [0, 0.0]
            for tag in tags:  # the tags' and the strategy's order is that of first appearance
                if tag not in self._tags:
                    self._tags[tag] = TagCounter()
            if strategy not in self._strategies:
                self._strategies[strategy] = StrategyCounter()
        pending[0] += 1
        pending[1] += score

    def _settle(self) -> None:
        """Count the passing rows :meth:`count_passed` noted."""
        if self._passes:
            for (tags, name), (times, score_sum) in self._passes.items():
                count_row(self._tags, tags, self._strategies[name], _PASSED, score_sum, times)
            self._passes.clear()

    def count_calls(self, calls: int, samples: int) -> None:
        """Count ``calls`` calls of the function under test that returned, ``samples`` of
        them the first (repeat 0) of their sample: ``count_sample`` for each, at once."""
        self._calls += calls
        self._samples += samples

    def add(self, row: EvaluationRow) -> None:
        """Account for one row."""
        outcome = row.outcome
        passed = outcome is _PASSED
        sample = row.sample
        strategy = self._strategies.get(row.strategy)
        if strategy is None:
            strategy = self._strategies[row.strategy] = StrategyCounter()
        count_row(self._tags, sample.tags, strategy, outcome, row.score)
        if self._clusters:
            self._count_clusters(row, passed, outcome is not NOT_APPLICABLE, strategy)
        if type(row.output) is Transcript and row.position == 0:
            ended = row.output.ended
            self._endings[ended] = self._endings.get(ended, 0) + 1
        metadata = row.metadata
        if metadata:
            self._usage.add(metadata)
            records = metadata.get("judges")
            if isinstance(records, list) and row.strategy is not None:
                judging = self._judging.get(row.strategy)
                if judging is None:
                    judging = self._judging[row.strategy] = JudgeCounter()
                judging.add(row, records)
        sample_metadata = sample.metadata
        if sample_metadata and row.strategy is not None:
            label = sample_metadata.get(LABEL_KEY)
            if label is not None:
                calibration = self._calibration.get(row.strategy)
                if calibration is None:
                    calibration = self._calibration[row.strategy] = CalibrationCounter(row.strategy)
                calibration.add(row, label)
        if self._keep_passed if passed or outcome is NOT_APPLICABLE else self._keep_failed:
            if self._in_order:
                if row.index > self._last_index:
                    self._last_index = row.index
                else:
                    self._in_order = False
            self._rows.append(row)

    def _count_clusters(
        self, row: EvaluationRow, passed: bool, applies: bool, strategy: StrategyCounter
    ) -> None:
        if not self._single_rows:
            sample = self._open.get(row.index)
            if sample is None:
                sample = self._open[row.index] = OpenSample(row.sample.name, row.sample.tags)
            sample.rows += 1
            sample.passed += passed
            sample.applicable += applies
            if self._repeats != 1 and row.repeat not in sample.outputs:
                sample.outputs[row.repeat] = output_key(row)
            if sample.rows == self._rows_per_sample:
                del self._open[row.index]
                self._close_sample(sample)
        if self._single_pairs:
            return
        key = (row.index, row.strategy)
        pair = self._pairs.get(key)
        if pair is None:
            pair = self._pairs[key] = OpenPair(row.sample.name)
        pair.runs += 1
        pair.passed += passed
        pair.applicable += applies
        if pair.runs == self._repeats:
            del self._pairs[key]
            self._close_pair(pair, row.strategy, strategy.moments, self._repeat_stats)

    @staticmethod
    def _close_pair(
        pair: OpenPair, strategy: str | None, moments: MomentsCounter, repeat_stats: RepeatCounter
    ) -> None:
        add_cluster(moments, pair.runs, pair.applicable, pair.passed)
        if pair.applicable:
            repeat_stats.add_pair(pair.name, strategy, pair.applicable, pair.passed)

    def _close_sample(
        self,
        sample: OpenSample,
        moments: MomentsCounter | None = None,
        tags: Mapping[str, MomentsCounter] | None = None,
        repeat_stats: RepeatCounter | None = None,
    ) -> None:
        add_cluster(moments or self._moments, sample.rows, sample.applicable, sample.passed)
        for tag in sample.tags:
            target = tags[tag] if tags is not None else self._tags[tag].moments
            add_cluster(target, sample.rows, sample.applicable, sample.passed)
        (repeat_stats or self._repeat_stats).add_outputs(sample.name, sample.outputs)

    def _closed(
        self,
    ) -> tuple[
        MomentsCounter,
        dict[str, MomentsCounter],
        dict[str | None, MomentsCounter],
        RepeatCounter,
    ]:
        """Copies of the cluster sums with every open sample and pair closed as it stands."""
        self._settle()
        moments = self._moments.copy()
        tags = {tag: counter.moments.copy() for tag, counter in self._tags.items()}
        strategies = {name: counter.moments.copy() for name, counter in self._strategies.items()}
        # one row per cluster: a not-applicable row is a cluster with no applicable row
        if self._single_rows:
            moments.add_singletons(
                sum(c.total - c.not_applicable for c in self._strategies.values()),
                sum(c.passed for c in self._strategies.values()),
            )
            for tag, tagged in self._tags.items():
                tags[tag].add_singletons(tagged.total - tagged.not_applicable, tagged.passed)
        if self._single_pairs:
            for name, counted in self._strategies.items():
                strategies[name].add_singletons(
                    counted.total - counted.not_applicable, counted.passed
                )
        repeat_stats = RepeatCounter()
        repeat_stats.absorb(self._repeat_stats)
        for sample in self._open.values():
            self._close_sample(sample, moments, tags, repeat_stats)
        for (_, strategy), pair in self._pairs.items():
            self._close_pair(pair, strategy, strategies[strategy], repeat_stats)
        return moments, tags, strategies, repeat_stats

    def merge(self, other: Self) -> Self:
        """Return a new aggregator holding both shards (this one's tag order first).

        The shards must hold disjoint samples (their samples are closed as they stand).
        """
        keep: KeepRows = self._keep if self._keep == other._keep else "failures"
        if "none" in (self._keep, other._keep):
            keep = "none"
        merged = type(self)(keep=keep)
        for source in (self, other):
            moments, tags, strategies, repeat_stats = source._closed()
            for tag, counter in source._tags.items():
                target = merged._tags.setdefault(tag, TagCounter())
                target.total += counter.total
                target.passed += counter.passed
                target.not_applicable += counter.not_applicable
                target.moments.absorb(tags[tag])
            for name, strategy in source._strategies.items():
                into = merged._strategies.setdefault(name, StrategyCounter())
                into.absorb_counts(strategy)
                into.moments.absorb(strategies[name])
            merged._function_errors += source._function_errors
            merged._usage.absorb(source._usage)
            for ending, count in source._endings.items():
                merged._endings[ending] = merged._endings.get(ending, 0) + count
            for name, calibration in source._calibration.items():
                merged._calibration.setdefault(name, CalibrationCounter(name)).absorb(calibration)
            for name, judging in source._judging.items():
                merged._judging.setdefault(name, JudgeCounter()).absorb(judging)
            merged._moments.absorb(moments)
            merged._repeat_stats.absorb(repeat_stats)
            merged._calls += source._calls
            merged._samples += source._samples
            if keep == "all":
                merged._rows.extend(source._rows)
            elif keep == "failures":
                merged._rows.extend(
                    r for r in source._rows if not r.passed and r.outcome is not NOT_APPLICABLE
                )
        starts = [s for s in (self._started, other._started) if s is not None]
        ends = [e for e in (self._finished, other._finished) if e is not None]
        merged._started = min(starts) if starts else None
        merged._finished = max(ends) if ends else None
        merged._run = _merge_runs(self._run, other._run)
        return merged

    def parts(self) -> ReportParts:
        """A snapshot of everything counted so far, rows in sample then strategy order."""
        moments, tag_moments, strategy_moments, repeat_stats = self._closed()
        return ReportParts(
            rows=tuple(self._rows if self._in_order else sorted(self._rows, key=_SORT_KEY)),
            counts=self._outcome_counts(),
            tags={
                tag: TagStatistics(
                    total=c.total,
                    passed=c.passed,
                    moments=tag_moments[tag].freeze(),
                    not_applicable=c.not_applicable,
                )
                for tag, c in self._tags.items()
            },
            strategies={
                name: c.freeze(strategy_moments[name])
                for name, c in self._strategies.items()
                if name is not None
            },
            function_errors=self._function_errors,
            calls=self._calls,
            samples=self._samples,
            moments=moments.freeze(),
            run=self.run_info,
            holds_all_rows=self._keep == "all",
            usage=self._usage.freeze(),
            repeats=repeat_stats.freeze(),
            calibration={name: c.freeze() for name, c in self._calibration.items()},
            judges={name: j.freeze() for name, j in self._judging.items()},
            conversations=dict(self._endings),
        )


def _merge_runs(first: RunInfo, second: RunInfo) -> RunInfo:
    expected = (
        None
        if first.samples_expected is None or second.samples_expected is None
        else first.samples_expected + second.samples_expected
    )
    return first.replace(
        complete=first.complete and second.complete,
        samples_expected=expected,
        strategies=tuple(dict.fromkeys((*first.strategies, *second.strategies))),
        warnings=(*first.warnings, *second.warnings),
    )
