"""The incremental aggregator: a report built from rows as they arrive, in O(1) per row."""

from __future__ import annotations

import time
from collections.abc import Mapping
from operator import attrgetter
from typing import Any, Literal, Self

import orjson

from .._conversation import Transcript
from .._util._stats import MomentsCounter, pass_at_k, pass_hat_k
from ._judging import LABEL_KEY, CalibrationCounter, JudgeCounter
from ._results import EvaluationRow, Outcome, safe_str
from ._run_info import RunInfo
from ._values import (
    USER_MODEL_KEY,
    FlakyCase,
    ModelUsage,
    RepeatStatistics,
    ReportParts,
    StrategyStatistics,
    TagStatistics,
)

__all__ = ["KeepRows", "RowAggregator"]

KeepRows = Literal["all", "failures", "none"]
_SORT_KEY = attrgetter("index", "repeat", "position")  # EvaluationRow.sort_key, in C
_PASSED = Outcome.PASSED
_FAILED = Outcome.FAILED


class _UsageCounter:
    __slots__ = ("completion_tokens", "cost", "prompt_tokens", "retries", "user_model_calls")

    def __init__(self) -> None:
        self.retries = self.prompt_tokens = self.completion_tokens = self.user_model_calls = 0
        self.cost = 0.0

    def add(self, metadata: Mapping[str, Any]) -> None:
        for key in ("completion_tokens", "cost", "prompt_tokens", "retries"):
            value = metadata.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                setattr(self, key, getattr(self, key) + value)
        user = metadata.get(USER_MODEL_KEY)
        if isinstance(user, Mapping):
            self.add(user)
            calls = user.get("calls")
            if isinstance(calls, int) and not isinstance(calls, bool):
                self.user_model_calls += calls

    def absorb(self, other: _UsageCounter) -> None:
        for key in self.__slots__:
            setattr(self, key, getattr(self, key) + getattr(other, key))

    def freeze(self) -> ModelUsage:
        return ModelUsage(
            retries=self.retries,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost=self.cost,
            user_model_calls=self.user_model_calls,
        )


class _StrategyCounter:
    __slots__ = (
        "errors",
        "failed",
        "moments",
        "passed",
        "score_sum",
        "scored",
        "skipped",
        "total",
        "unscored",
    )

    def __init__(self) -> None:
        self.total = self.passed = self.failed = self.unscored = self.errors = 0
        self.skipped = self.scored = 0
        self.score_sum = 0.0
        self.moments = MomentsCounter()

    def absorb_counts(self, other: _StrategyCounter) -> None:
        for key in ("total", "passed", "failed", "unscored", "errors", "skipped", "scored"):
            setattr(self, key, getattr(self, key) + getattr(other, key))
        self.score_sum += other.score_sum

    def freeze(self, moments: MomentsCounter) -> StrategyStatistics:
        return StrategyStatistics(
            total=self.total,
            passed=self.passed,
            failed=self.failed,
            unscored=self.unscored,
            errors=self.errors,
            score_sum=self.score_sum,
            scored=self.scored,
            skipped=self.skipped,
            moments=moments.freeze(),
        )


class _TagCounter:
    __slots__ = ("moments", "passed", "total")

    def __init__(self) -> None:
        self.total = self.passed = 0
        self.moments = MomentsCounter()


class _OpenSample:
    """The rows of one sample seen so far, until all its rows have arrived."""

    __slots__ = ("name", "outputs", "passed", "rows", "tags")

    def __init__(self, name: str, tags: tuple[str, ...]) -> None:
        self.name = name
        self.rows = 0
        self.passed = 0
        self.tags = tags
        self.outputs: dict[int, bytes] = {}


class _OpenPair:
    """The repeats of one (sample, strategy) pair seen so far."""

    __slots__ = ("name", "passed", "runs")

    def __init__(self, name: str) -> None:
        self.name = name
        self.runs = 0
        self.passed = 0


class _RepeatCounter:
    __slots__ = (
        "agreement_samples",
        "agreement_sum",
        "flaky",
        "inconsistent",
        "pairs",
        "pass_at",
        "pass_count",
        "pass_hat",
        "repeats",
    )

    def __init__(self) -> None:
        self.repeats = 0
        self.pairs = 0
        self.flaky: list[FlakyCase] = []
        self.pass_at: list[float] = []
        self.pass_hat: list[float] = []
        self.pass_count: list[int] = []
        self.agreement_sum = 0.0
        self.agreement_samples = 0
        self.inconsistent: list[tuple[str, float]] = []

    def add_pair(self, name: str, strategy: str | None, runs: int, passed: int) -> None:
        self.pairs += 1
        self.repeats = max(self.repeats, runs)
        while len(self.pass_at) < runs:
            self.pass_at.append(0.0)
            self.pass_hat.append(0.0)
            self.pass_count.append(0)
        for k in range(1, runs + 1):
            self.pass_at[k - 1] += pass_at_k(runs, passed, k)
            self.pass_hat[k - 1] += pass_hat_k(runs, passed, k)
            self.pass_count[k - 1] += 1
        if 0 < passed < runs:
            self.flaky.append(FlakyCase(sample=name, strategy=strategy, passed=passed, runs=runs))

    def add_outputs(self, name: str, outputs: Mapping[int, bytes]) -> None:
        if len(outputs) < 2:
            return
        counts: dict[bytes, int] = {}
        for key in outputs.values():
            counts[key] = counts.get(key, 0) + 1
        agreement = max(counts.values()) / len(outputs)
        self.agreement_sum += agreement
        self.agreement_samples += 1
        if agreement < 1.0:
            self.inconsistent.append((name, agreement))

    def absorb(self, other: _RepeatCounter) -> None:
        self.repeats = max(self.repeats, other.repeats)
        self.pairs += other.pairs
        self.flaky += other.flaky
        while len(self.pass_at) < len(other.pass_at):
            self.pass_at.append(0.0)
            self.pass_hat.append(0.0)
            self.pass_count.append(0)
        for i in range(len(other.pass_at)):
            self.pass_at[i] += other.pass_at[i]
            self.pass_hat[i] += other.pass_hat[i]
            self.pass_count[i] += other.pass_count[i]
        self.agreement_sum += other.agreement_sum
        self.agreement_samples += other.agreement_samples
        self.inconsistent += other.inconsistent

    def freeze(self) -> RepeatStatistics | None:
        if self.repeats < 2:
            return None
        counts = self.pass_count
        pass_at = {k + 1: self.pass_at[k] / n for k, n in enumerate(counts)}
        pass_hat = {k + 1: self.pass_hat[k] / n for k, n in enumerate(counts)}
        agreement = self.agreement_sum / self.agreement_samples if self.agreement_samples else None
        return RepeatStatistics(
            repeats=self.repeats,
            pairs=self.pairs,
            flaky=tuple(self.flaky),
            pass_at_k=pass_at,
            pass_hat_k=pass_hat,
            output_agreement=agreement,
            inconsistent=tuple(self.inconsistent),
        )


def _normalized(output: Any) -> bytes:
    """The key two outputs share when they agree after whitespace and case normalisation."""
    if isinstance(output, str):
        return " ".join(output.split()).casefold().encode("utf-8", "backslashreplace")
    try:
        return orjson.dumps(output, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return safe_str(output).encode("utf-8", "backslashreplace")


def _output_key(row: EvaluationRow) -> bytes:
    if row.function_failed and row.error is not None:
        return b"\x00error:" + row.error.type.encode()
    return _normalized(row.output)


class RowAggregator:
    """The counting behind :class:`~aeval.Aggregator`, handed over as :class:`ReportParts`.

    Every statistic of a report is kept up to date in O(1) per row; ``Aggregator`` documents
    the arguments and adds ``report()``.
    """

    __slots__ = (
        "_calibration",
        "_calls",
        "_clusters",
        "_counts",
        "_endings",
        "_finished",
        "_function_errors",
        "_in_order",
        "_judging",
        "_keep",
        "_last_index",
        "_moments",
        "_open",
        "_pairs",
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
        self._counts = dict.fromkeys(Outcome, 0)
        self._tags: dict[str, _TagCounter] = {}
        self._strategies: dict[str | None, _StrategyCounter] = {}
        self._function_errors = 0
        self._rows: list[EvaluationRow] = []
        self._calls = 0
        self._samples = 0
        self._started: float | None = None
        self._finished: float | None = None
        self._usage = _UsageCounter()
        self._endings: dict[str, int] = {}
        self._calibration: dict[str, CalibrationCounter] = {}
        self._judging: dict[str, JudgeCounter] = {}
        self._moments = MomentsCounter()
        self._open: dict[int, _OpenSample] = {}
        self._pairs: dict[tuple[int, str | None], _OpenPair] = {}
        self._repeat_stats = _RepeatCounter()
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
        return sum(self._counts.values())

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

    def count_calls(self, calls: int, samples: int) -> None:
        """Count ``calls`` calls of the function under test that returned, ``samples`` of
        them the first (repeat 0) of their sample: ``count_sample`` for each, at once."""
        self._calls += calls
        self._samples += samples

    def add(self, row: EvaluationRow) -> None:
        """Account for one row."""
        outcome = row.outcome
        self._counts[outcome] += 1
        passed = outcome is _PASSED
        sample = row.sample
        if sample.tags:
            tags = self._tags
            for tag in sample.tags:
                counter = tags.get(tag)
                if counter is None:
                    counter = tags[tag] = _TagCounter()
                counter.total += 1
                counter.passed += passed
        strategy = self._strategies.get(row.strategy)
        if strategy is None:
            strategy = self._strategies[row.strategy] = _StrategyCounter()
        strategy.total += 1
        if passed:
            strategy.passed += 1
        elif outcome is _FAILED:
            strategy.failed += 1
        elif outcome is Outcome.UNSCORED:
            strategy.unscored += 1
        elif outcome is Outcome.SKIPPED:
            strategy.skipped += 1
        else:
            strategy.errors += 1
        score = row.score
        if score is not None and (passed or outcome is _FAILED):
            strategy.scored += 1
            strategy.score_sum += score
        if self._clusters:
            self._count_clusters(row, passed, strategy)
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
        keep = self._keep
        if keep == "all" or (keep == "failures" and not passed):
            if self._in_order:
                if row.index > self._last_index:
                    self._last_index = row.index
                else:
                    self._in_order = False
            self._rows.append(row)

    def _count_clusters(self, row: EvaluationRow, passed: bool, strategy: _StrategyCounter) -> None:
        if not self._single_rows:
            sample = self._open.get(row.index)
            if sample is None:
                sample = self._open[row.index] = _OpenSample(row.sample.name, row.sample.tags)
            sample.rows += 1
            sample.passed += passed
            if self._repeats != 1 and row.repeat not in sample.outputs:
                sample.outputs[row.repeat] = _output_key(row)
            if sample.rows == self._rows_per_sample:
                del self._open[row.index]
                self._close_sample(sample)
        if self._single_pairs:
            return
        key = (row.index, row.strategy)
        pair = self._pairs.get(key)
        if pair is None:
            pair = self._pairs[key] = _OpenPair(row.sample.name)
        pair.runs += 1
        pair.passed += passed
        if pair.runs == self._repeats:
            del self._pairs[key]
            strategy.moments.add_cluster(pair.runs, pair.passed)
            self._repeat_stats.add_pair(pair.name, row.strategy, pair.runs, pair.passed)

    def _close_sample(
        self,
        sample: _OpenSample,
        moments: MomentsCounter | None = None,
        tags: Mapping[str, MomentsCounter] | None = None,
        repeat_stats: _RepeatCounter | None = None,
    ) -> None:
        (moments or self._moments).add_cluster(sample.rows, sample.passed)
        for tag in sample.tags:
            target = tags[tag] if tags is not None else self._tags[tag].moments
            target.add_cluster(sample.rows, sample.passed)
        (repeat_stats or self._repeat_stats).add_outputs(sample.name, sample.outputs)

    def _closed(
        self,
    ) -> tuple[
        MomentsCounter,
        dict[str, MomentsCounter],
        dict[str | None, MomentsCounter],
        _RepeatCounter,
    ]:
        """Copies of the cluster sums with every open sample and pair closed as it stands."""
        moments = self._moments.copy()
        tags = {tag: counter.moments.copy() for tag, counter in self._tags.items()}
        strategies = {name: counter.moments.copy() for name, counter in self._strategies.items()}
        if self._single_rows:
            moments.add_singletons(sum(self._counts.values()), self._counts[_PASSED])
            for tag, tagged in self._tags.items():
                tags[tag].add_singletons(tagged.total, tagged.passed)
        if self._single_pairs:
            for name, counted in self._strategies.items():
                strategies[name].add_singletons(counted.total, counted.passed)
        repeat_stats = _RepeatCounter()
        repeat_stats.absorb(self._repeat_stats)
        for sample in self._open.values():
            self._close_sample(sample, moments, tags, repeat_stats)
        for (_, strategy), pair in self._pairs.items():
            strategies[strategy].add_cluster(pair.runs, pair.passed)
            repeat_stats.add_pair(pair.name, strategy, pair.runs, pair.passed)
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
            for outcome, count in source._counts.items():
                merged._counts[outcome] += count
            for tag, counter in source._tags.items():
                target = merged._tags.setdefault(tag, _TagCounter())
                target.total += counter.total
                target.passed += counter.passed
                target.moments.absorb(tags[tag])
            for name, strategy in source._strategies.items():
                into = merged._strategies.setdefault(name, _StrategyCounter())
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
                merged._rows.extend(r for r in source._rows if not r.passed)
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
            counts={o: self._counts[o] for o in Outcome},
            tags={
                tag: TagStatistics(
                    total=c.total, passed=c.passed, moments=tag_moments[tag].freeze()
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
