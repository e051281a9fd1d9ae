"""The scores of live traffic over time: rows counted in time buckets, per strategy and tag."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from .._reporting._results import EvaluationRow, Outcome

__all__ = ["Since", "Window", "WindowScore", "as_timestamp"]

Since: TypeAlias = float | datetime | timedelta
"""A moment: Unix time, a ``datetime`` (naive means UTC, as in the run store), or a
``timedelta`` ago."""

# Counter slots: rows (counted when read: the sum of the six outcomes), passed, failed,
# errors, unscored, skipped, scored rows, sum of scores, not applicable.
_ROWS, _PASSED, _FAILED, _ERRORS, _UNSCORED, _SKIPPED, _SCORED, _SUM, _NA = range(9)
_SLOTS = 9
_SLOT = {
    Outcome.PASSED: _PASSED,
    Outcome.FAILED: _FAILED,
    Outcome.ERROR: _ERRORS,
    Outcome.UNSCORED: _UNSCORED,
    Outcome.SKIPPED: _SKIPPED,
    Outcome.NOT_APPLICABLE: _NA,
}
_Key: TypeAlias = tuple[str | None, tuple[str, ...]]  # (strategy, the response's tags)
_Seen: TypeAlias = tuple[int, str | None, tuple[str, ...], Outcome, float | None]
"""A row not counted yet: its bucket, strategy, tags, outcome and score."""
_UNCOUNTED = 1024
"""The most rows kept uncounted: then (and before any read) they are counted together."""


def as_timestamp(moment: Since, now: float) -> float:
    """``moment`` as Unix time (a ``timedelta`` counts back from ``now``; a naive
    ``datetime`` is UTC, as everywhere in aeval)."""
    if isinstance(moment, timedelta):
        return now - moment.total_seconds()
    if isinstance(moment, datetime):
        return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()
    if isinstance(moment, bool) or not isinstance(moment, int | float) or math.isnan(moment):
        raise TypeError(
            f"since must be Unix time, a datetime or a timedelta, got {type(moment).__name__}"
        )
    return float(moment)


@dataclass(frozen=True, slots=True)
class WindowScore:
    """The rows of live traffic in a time window (see ``OnlineEvaluator.window``).

    As in a report, every row is one (response, strategy) and error, unscored and skipped
    rows count as not passed; a not-applicable row (the response states no expectation for
    the check) neither passes nor fails and is left out of the score.

    Attributes:
        since: The start of what was counted (Unix time): the moment asked for, rounded down
            to the window's resolution, and never before the oldest row still kept.
        until: The end of what was counted (Unix time).
        rows: Rows counted.
        passed: Rows that passed.
        failed: Rows that failed.
        errors: Rows whose strategy raised or timed out.
        unscored: Rows without a verdict (an unparseable judge reply).
        skipped: Rows of a gated strategy whose gate did not open.
        mean_score: The mean 0-1 score of the passed and failed rows; ``None`` without any.
        not_applicable: Rows whose response states no expectation for the strategy.
    """

    since: float
    until: float
    rows: int
    passed: int
    failed: int
    errors: int
    unscored: int
    skipped: int
    mean_score: float | None
    not_applicable: int = 0

    @property
    def score(self) -> float | None:
        """100 × passed rows / applicable rows; ``None`` without any (no data). The window
        counts rows, not responses: with every row applicable this is a report's score;
        with not-applicable rows it is passed / applicable rows over the window."""
        applicable = self.rows - self.not_applicable
        return 100.0 * self.passed / applicable if applicable else None


class Window:
    """Counts rows by the time of their response, in buckets of ``resolution`` seconds.

    Memory is bounded by time, not traffic: buckets older than ``retention`` seconds are
    forgotten. A row is noted as it comes (its bucket, strategy, tags, outcome and score);
    the notes are counted together, the same ones once, when a thousand have gathered and
    before every read, into one counter per strategy and response tags (a tag's and a
    strategy's totals are summed when read). So a read sees every row added before it.
    """

    def __init__(self, *, resolution: float, retention: float) -> None:
        if not resolution > 0:
            raise ValueError(f"resolution must be a positive number of seconds: {resolution!r}")
        if not retention >= resolution:
            raise ValueError(
                f"retention ({retention!r} s) must be at least the resolution ({resolution!r} s)"
            )
        self.resolution = float(resolution)
        self.retention = float(retention)
        self._buckets: dict[int, dict[_Key, list[float]]] = {}
        self._oldest = 0
        self._uncounted: list[_Seen] = []
        self._last: int | None = None  # the bucket of the last row noted

    def add(self, rows: Iterable[EvaluationRow], now: float) -> None:
        """Count ``rows`` (each by its ``timestamp``, else ``now``)."""
        resolution = self.resolution
        uncounted = self._uncounted
        last = self._last  # the bucket of the last row noted, known to be kept
        seen = None  # the rows of one response share their moment: its bucket found once
        index = 0
        for row in rows:
            moment = row.timestamp
            if moment is None:
                moment = now
            if moment != seen:
                index = int(moment // resolution)
                if index != last:
                    if index not in self._buckets:
                        if index < self._oldest:
                            seen = None
                            continue  # older than the window keeps
                        self._buckets[index] = {}
                        self._forget(now)
                    last = index
                else:
                    index = last  # the same int: equal notes then compare by identity
                seen = moment
            uncounted.append((index, row.strategy, row.sample.tags, row.outcome, row.score))
        self._last = last
        if len(uncounted) >= _UNCOUNTED:
            self._count()

    def _count(self) -> None:
        """Count the rows noted by :meth:`add` into their buckets' counters (those of a bucket
        forgotten since are not counted: it is not read any more)."""
        if not self._uncounted:
            return
        seen = Counter(self._uncounted)
        self._uncounted = []
        for (index, strategy, tags, outcome, score), times in seen.items():
            bucket = self._buckets.get(index)
            if bucket is None:
                continue
            key = (strategy, tags)
            counter = bucket.get(key)
            if counter is None:
                counter = bucket[key] = [0.0] * _SLOTS
            slot = _SLOT[outcome]
            counter[slot] += times
            if slot <= _FAILED and score is not None:  # passed or failed: scored
                counter[_SCORED] += times
                counter[_SUM] += score * times

    def _forget(self, now: float) -> None:
        oldest = int((now - self.retention) // self.resolution)
        if oldest > self._oldest:
            self._oldest = oldest
            for index in [i for i in self._buckets if i < oldest]:
                del self._buckets[index]

    def score(
        self,
        since: float,
        until: float,
        *,
        tag: str | None = None,
        strategy: str | None = None,
    ) -> WindowScore:
        """The rows of responses from ``since`` to ``until``, of one tag and strategy if given."""
        self._count()
        totals = [0.0] * _SLOTS
        first, last = int(since // self.resolution), int(until // self.resolution)
        first = max(first, self._oldest)
        for index, bucket in self._buckets.items():
            if first <= index <= last:
                for (name, tags), counter in bucket.items():
                    if strategy is not None and name != strategy:
                        continue
                    times = 1 if tag is None else tags.count(tag)  # a tag given twice counts twice
                    if times:
                        for slot in range(_SLOTS):
                            totals[slot] += times * counter[slot]
        return _freeze(totals, first * self.resolution, until)

    def keys(self, since: float, until: float) -> tuple[set[str], set[str]]:
        """The strategies and the tags seen from ``since`` to ``until``."""
        self._count()
        strategies: set[str] = set()
        tags: set[str] = set()
        first = max(int(since // self.resolution), self._oldest)
        last = int(until // self.resolution)
        for index, bucket in self._buckets.items():
            if first <= index <= last:
                for name, row_tags in bucket:
                    if name is not None:
                        strategies.add(name)
                    tags.update(row_tags)
        return strategies, tags

    def span(self, since: Since | None, until: Since | None, now: float) -> tuple[float, float]:
        """From ``since`` (default: as far back as kept) to ``until`` (default: ``now``)."""
        start = -float("inf") if since is None else as_timestamp(since, now)
        end = now if until is None else as_timestamp(until, now)
        if start == -float("inf"):
            start = now - self.retention
        return start, end

    def by(
        self, since: float, until: float, *, field: str, tag: str | None = None
    ) -> Mapping[str, WindowScore]:
        """One :class:`WindowScore` per strategy (``field="strategy"``) or per tag."""
        strategies, tags = self.keys(since, until)
        if field == "strategy":
            return {s: self.score(since, until, strategy=s, tag=tag) for s in sorted(strategies)}
        return {t: self.score(since, until, tag=t) for t in sorted(tags)}


def _freeze(totals: list[float], since: float, until: float) -> WindowScore:
    scored = int(totals[_SCORED])
    rows = totals[_PASSED] + totals[_FAILED] + totals[_ERRORS] + totals[_UNSCORED]
    return WindowScore(
        since=since,
        until=until,
        rows=int(rows + totals[_SKIPPED] + totals[_NA]),
        passed=int(totals[_PASSED]),
        failed=int(totals[_FAILED]),
        errors=int(totals[_ERRORS]),
        unscored=int(totals[_UNSCORED]),
        skipped=int(totals[_SKIPPED]),
        mean_score=totals[_SUM] / scored if scored else None,
        not_applicable=int(totals[_NA]),
    )
