"""The incremental aggregator and the evaluation report it produces."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from ._results import EvaluationRow, Outcome

__all__ = [
    "Aggregator",
    "EvaluationReport",
    "KeepRows",
    "ModelUsage",
    "StrategyStatistics",
    "TagStatistics",
]

KeepRows = Literal["all", "failures", "none"]


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
    """Counts for the rows whose sample carries one tag."""

    total: int
    passed: int

    @property
    def score(self) -> float:
        """100 × passed / total, 0.0 when empty."""
        return 100.0 * self.passed / self.total if self.total else 0.0


@dataclass(frozen=True, slots=True)
class StrategyStatistics:
    """Counts and the mean 0-1 score of one strategy's rows.

    Attributes:
        total: Rows of this strategy.
        passed: Passed rows.
        failed: Failed rows.
        unscored: Rows with no verdict.
        errors: Rows where the strategy raised.
        score_sum: The sum of the scored rows' 0-1 scores.
        scored: Rows with a numeric score (not unscored, not error).
    """

    total: int
    passed: int
    failed: int
    unscored: int
    errors: int
    score_sum: float
    scored: int

    @property
    def score(self) -> float:
        """100 × passed / total, 0.0 when empty (the same formula as the report's score)."""
        return 100.0 * self.passed / self.total if self.total else 0.0

    @property
    def mean_score(self) -> float | None:
        """The mean 0-1 score of the scored rows, ``None`` when none was scored."""
        return self.score_sum / self.scored if self.scored else None


class _StrategyCounter:
    __slots__ = ("errors", "failed", "passed", "score_sum", "scored", "total", "unscored")

    def __init__(self) -> None:
        self.total = self.passed = self.failed = self.unscored = self.errors = self.scored = 0
        self.score_sum = 0.0

    def freeze(self) -> StrategyStatistics:
        return StrategyStatistics(
            self.total,
            self.passed,
            self.failed,
            self.unscored,
            self.errors,
            self.score_sum,
            self.scored,
        )

    def absorb(self, other: _StrategyCounter) -> None:
        self.total += other.total
        self.passed += other.passed
        self.failed += other.failed
        self.unscored += other.unscored
        self.errors += other.errors
        self.scored += other.scored
        self.score_sum += other.score_sum


class Aggregator:
    """Builds a report from rows as they arrive, in O(1) work per row.

    Two aggregators over disjoint shards of a run merge (:meth:`merge`) into the same report
    as one aggregator over the whole run.

    Args:
        keep: Which rows to hold: ``"all"``, only the ``"failures"`` (rows that did not pass),
            or ``"none"``. Counts and scores always cover every row, so a run over millions of
            samples can keep memory bounded.
    """

    __slots__ = (
        "_counts",
        "_finished",
        "_function_errors",
        "_keep",
        "_rows",
        "_samples",
        "_started",
        "_strategies",
        "_tags",
        "_usage",
    )

    def __init__(self, *, keep: KeepRows = "all") -> None:
        if keep not in ("all", "failures", "none"):
            raise ValueError(f"keep must be 'all', 'failures' or 'none', got {keep!r}")
        self._keep: KeepRows = keep
        self._counts = dict.fromkeys(Outcome, 0)
        self._tags: dict[str, list[int]] = {}
        self._strategies: dict[str, _StrategyCounter] = {}
        self._function_errors = 0
        self._rows: list[EvaluationRow] = []
        self._samples = 0
        self._started: float | None = None
        self._finished: float | None = None
        self._usage: list[Any] = [0, 0, 0, 0.0]

    @property
    def keep(self) -> KeepRows:
        """Which rows this aggregator holds."""
        return self._keep

    def start(self) -> None:
        """Mark the start of the run (wall clock)."""
        if self._started is None:
            self._started = time.time()

    def finish(self) -> None:
        """Mark the end of the run (wall clock)."""
        self._finished = time.time()

    def count_sample(self) -> None:
        """Count one execution of the function under test."""
        self._samples += 1

    def add(self, row: EvaluationRow) -> None:
        """Account for one row."""
        outcome = row.outcome
        self._counts[outcome] += 1
        passed = outcome is Outcome.PASSED
        tags = self._tags
        for tag in row.sample.tags:
            stats = tags.get(tag)
            if stats is None:
                tags[tag] = [1, int(passed)]
            else:
                stats[0] += 1
                stats[1] += passed
        if row.strategy is None:
            self._function_errors += 1
        else:
            counter = self._strategies.get(row.strategy)
            if counter is None:
                counter = self._strategies[row.strategy] = _StrategyCounter()
            counter.total += 1
            if passed:
                counter.passed += 1
            elif outcome is Outcome.FAILED:
                counter.failed += 1
            elif outcome is Outcome.UNSCORED:
                counter.unscored += 1
            else:
                counter.errors += 1
            if row.score is not None and outcome is not Outcome.ERROR:
                counter.scored += 1
                counter.score_sum += row.score
        metadata = row.metadata
        if metadata:
            _count_usage(self._usage, metadata)
        keep = self._keep
        if keep == "all" or (keep == "failures" and not passed):
            self._rows.append(row)

    def merge(self, other: Aggregator) -> Aggregator:
        """Return a new aggregator holding both shards (this one's tag order first)."""
        keep: KeepRows = self._keep if self._keep == other._keep else "failures"
        if "none" in (self._keep, other._keep):
            keep = "none"
        merged = Aggregator(keep=keep)
        for source in (self, other):
            for outcome, count in source._counts.items():
                merged._counts[outcome] += count
            for tag, (total, passed) in source._tags.items():
                stats = merged._tags.setdefault(tag, [0, 0])
                stats[0] += total
                stats[1] += passed
            for name, counter in source._strategies.items():
                merged._strategies.setdefault(name, _StrategyCounter()).absorb(counter)
            merged._function_errors += source._function_errors
            for i, value in enumerate(source._usage):
                merged._usage[i] += value
            merged._samples += source._samples
            if keep == "all":
                merged._rows.extend(source._rows)
            elif keep == "failures":
                merged._rows.extend(r for r in source._rows if not r.passed)
        starts = [s for s in (self._started, other._started) if s is not None]
        ends = [e for e in (self._finished, other._finished) if e is not None]
        merged._started = min(starts) if starts else None
        merged._finished = max(ends) if ends else None
        return merged

    def report(self) -> EvaluationReport:
        """A snapshot of everything counted so far, rows in sample then strategy order."""
        rows = sorted(self._rows, key=_sort_key)
        started = self._started
        finished = self._finished if self._finished is not None else time.time()
        return EvaluationReport._from_parts(
            rows=tuple(rows),
            counts={o: self._counts[o] for o in Outcome},
            tags={tag: TagStatistics(t, p) for tag, (t, p) in self._tags.items()},
            strategies={name: c.freeze() for name, c in self._strategies.items()},
            function_errors=self._function_errors,
            samples=self._samples,
            started_at=started,
            duration=(finished - started) if started is not None else 0.0,
            complete=self._keep == "all",
            usage=ModelUsage(*self._usage),
        )


_USAGE_KEYS = ("retries", "prompt_tokens", "completion_tokens", "cost")


def _count_usage(totals: list[Any], metadata: Mapping[str, Any]) -> None:
    for i, key in enumerate(_USAGE_KEYS):
        value = metadata.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            totals[i] += value


def _sort_key(row: EvaluationRow) -> tuple[int, int, int]:
    return (row.index, row.repeat, row.position)


class EvaluationReport:
    """The outcome of an evaluation run.

    ``score`` is 100 × passed rows / rows (0.0 when empty): each (sample, strategy) pair is a
    row, and error and unscored rows count as not passed. Rows are in sample order, then
    strategy order, whatever the completion order.

    A report can be built from rows directly: ``EvaluationReport(rows)``.
    """

    __slots__ = (
        "_complete",
        "_counts",
        "_duration",
        "_function_errors",
        "_rows",
        "_samples",
        "_started_at",
        "_strategies",
        "_tags",
        "_usage",
    )

    _rows: tuple[EvaluationRow, ...]
    _counts: Mapping[Outcome, int]
    _tags: Mapping[str, TagStatistics]
    _strategies: Mapping[str, StrategyStatistics]
    _function_errors: int
    _samples: int
    _started_at: float | None
    _duration: float
    _complete: bool
    _usage: ModelUsage

    def __init__(self, rows: Iterable[EvaluationRow] = ()) -> None:
        aggregator = Aggregator()
        for row in rows:
            aggregator.add(row)
        report = aggregator.report()
        for name in EvaluationReport.__slots__:
            setattr(self, name, getattr(report, name))
        calls = {(r.index, r.repeat): r.duration for r in self._rows}
        self._samples = len(calls)
        self._duration = sum(calls.values())

    @classmethod
    def _from_parts(
        cls,
        *,
        rows: tuple[EvaluationRow, ...],
        counts: Mapping[Outcome, int],
        tags: Mapping[str, TagStatistics],
        strategies: Mapping[str, StrategyStatistics],
        function_errors: int,
        samples: int,
        started_at: float | None,
        duration: float,
        complete: bool,
        usage: ModelUsage,
    ) -> EvaluationReport:
        report = object.__new__(cls)
        report._rows = rows
        report._counts = counts
        report._tags = tags
        report._strategies = strategies
        report._function_errors = function_errors
        report._samples = samples
        report._started_at = started_at
        report._duration = duration
        report._complete = complete
        report._usage = usage
        return report

    # -- counts and scores -------------------------------------------------------------------

    @property
    def score(self) -> float:
        """100 × passed rows / rows, 0.0 for an empty report."""
        total = self.evaluation_count
        return 100.0 * self._counts[Outcome.PASSED] / total if total else 0.0

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
        """Rows a strategy failed (errors and unscored rows are counted apart)."""
        return self._counts[Outcome.FAILED]

    @property
    def not_passed_count(self) -> int:
        """Rows that did not pass: failed, unscored and errors together."""
        return self.evaluation_count - self.passed_count

    @property
    def error_count(self) -> int:
        """Rows where the function under test or a strategy raised."""
        return self._counts[Outcome.ERROR]

    @property
    def function_error_count(self) -> int:
        """Error rows of the function under test (one per failing sample)."""
        return self._function_errors

    @property
    def unscored_count(self) -> int:
        """Rows where a strategy could not reach a verdict."""
        return self._counts[Outcome.UNSCORED]

    @property
    def sample_count(self) -> int:
        """Executions of the function under test (samples × repeats)."""
        return self._samples

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
        """Row counts per tag, in order of first appearance."""
        return dict(self._tags)

    @property
    def strategy_scores(self) -> dict[str, float]:
        """Score (100 × passed / rows) per strategy name, in order of first appearance."""
        return {name: stats.score for name, stats in self._strategies.items()}

    @property
    def strategy_statistics(self) -> Mapping[str, StrategyStatistics]:
        """Counts and mean 0-1 score per strategy."""
        return dict(self._strategies)

    @property
    def duration(self) -> float:
        """Wall-clock seconds of the run.

        A report built from rows (``EvaluationReport(rows)``) knows no wall clock: there it is
        the summed time of the function calls, one per sample and repeat.
        """
        return self._duration

    @property
    def usage(self) -> ModelUsage:
        """Retries, tokens and cost of the strategies' model calls, summed over every row."""
        return self._usage

    @property
    def started_at(self) -> float | None:
        """When the run started (a Unix timestamp), if known."""
        return self._started_at

    # -- rows ---------------------------------------------------------------------------------

    @property
    def evaluations(self) -> Sequence[EvaluationRow]:
        """The rows held, in sample order then strategy order.

        A report built with ``keep="failures"`` or ``keep="none"`` holds only those rows; the
        counts still cover every row (see :attr:`is_complete`).
        """
        return self._rows

    @property
    def failures(self) -> list[EvaluationRow]:
        """The rows held that did not pass."""
        return [row for row in self._rows if not row.passed]

    @property
    def is_complete(self) -> bool:
        """Whether every row is held in :attr:`evaluations`."""
        return self._complete

    @property
    def tags(self) -> tuple[str, ...]:
        """Every tag seen, in order of first appearance."""
        return tuple(self._tags)

    def __len__(self) -> int:
        return self.evaluation_count

    def __repr__(self) -> str:
        return (
            f"<EvaluationReport score={self.score:.2f}% rows={self.evaluation_count} "
            f"passed={self.passed_count} failed={self.failed_count} "
            f"unscored={self.unscored_count} errors={self.error_count}>"
        )

    # -- output -------------------------------------------------------------------------------

    def format(self, format: str = "markdown", **options: Any) -> str:
        """Render the report with a registered formatter (``"markdown"``, ``"json"``, …)."""
        from .formatters import get_formatter

        rendered = get_formatter(format).format(self, **options)
        return rendered if isinstance(rendered, str) else rendered.decode()

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
        from .formatters import save_report

        return await save_report(self, Path(directory), formats=formats, options=options)

    async def save_as(
        self, path: str | PathLike[str], format: str | None = None, **options: Any
    ) -> Path:
        """Write one file; the format defaults to the one matching the file's extension."""
        from .formatters import save_report_as

        return await save_report_as(self, Path(path), format, options=options)
