"""What the run store gives back: stored runs and history points; and the ``since`` of queries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from .._reporting._run_info import RunInfo

__all__ = ["HistoryPoint", "RunSummary", "Since", "parse_since"]

Since = datetime | date | timedelta | float | int | str
"""A moment: a datetime (naive means UTC), a date (its midnight, UTC), a Unix time, a
duration back from now, or text: ``2026-11-01``, ``2026-11-01T09:30``, ``7d``, ``12h``."""

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One stored run, as :meth:`RunStore.runs` lists it.

    The counts, score and interval are those of the report :meth:`RunStore.load` rebuilds. A
    run still going on, or whose process was killed, is listed with the rows stored so far.

    Attributes:
        id: The run's id (time-based, sortable: ``20261130-195042-3f9a``).
        name: The run's name (the configuration's, or the test's).
        started_at: When the run started (Unix time).
        finished_at: When it ended; ``None`` for a run still going on or killed.
        complete: Whether it went through every sample.
        rows: Rows stored.
        passed: Rows that passed.
        failed: Rows a strategy failed.
        unscored: Rows without a verdict.
        errors: Error rows.
        skipped: Skipped rows.
        samples: Samples evaluated (with an applicable row, when some row is not applicable).
        samples_expected: The samples the run's source held, when known.
        score: The report's score: 100 × passed / rows (0.0 without rows); with
            not-applicable rows, the mean over samples of passed / applicable rows.
        interval: The score's 95% interval in percent, clustered by sample.
        git_commit: The commit checked out, when run in a git repository.
        git_dirty: Whether the working tree had uncommitted changes (``None``: unknown).
        config_hash: A digest of the configuration, when one was given.
        models: The model names the strategies reported (``judge_model``, ...).
        labels: The user's labels for the run.
        aeval_version: The aeval that ran.
        header: The run's whole header.
        shard: ``"I/N"`` for the run of one shard (``aeval run --shard``), else ``None``.
    """

    id: str
    name: str
    started_at: float
    finished_at: float | None
    complete: bool
    rows: int
    passed: int
    failed: int
    unscored: int
    errors: int
    skipped: int
    samples: int
    samples_expected: int | None
    score: float
    interval: tuple[float, float]
    git_commit: str | None
    git_dirty: bool | None
    config_hash: str | None
    models: tuple[str, ...]
    labels: tuple[str, ...]
    aeval_version: str | None
    header: RunInfo
    shard: str | None = None

    @property
    def partial(self) -> bool:
        """Whether the run did not go through every sample (stopped, killed, or still going)."""
        return not self.complete

    @property
    def not_applicable(self) -> int:
        """Rows whose strategy's expectation the sample does not state (neither passed nor
        failed, left out of the score): the rows no other count holds."""
        counted = self.passed + self.failed + self.unscored + self.errors + self.skipped
        return max(0, self.rows - counted)


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """The pass rate of one run: overall, or over the rows of one tag or one strategy.

    Attributes:
        run_id: The run's id.
        started_at: When the run started (Unix time).
        score: The report's score over these rows (100 × passed / rows when every row applies).
        interval: The score's 95% interval in percent, clustered by sample.
        rows: Rows counted.
        passed: Rows that passed.
        samples: Samples those rows belong to.
        complete: Whether the run went through every sample.
        git_commit: The commit checked out.
        git_dirty: Whether the working tree had uncommitted changes (``None``: unknown).
        labels: The user's labels for the run.
        shard: ``"I/N"`` for the run of one shard (listed with ``shards=True`` only).
    """

    run_id: str
    started_at: float
    score: float
    interval: tuple[float, float]
    rows: int
    passed: int
    samples: int
    complete: bool
    git_commit: str | None
    git_dirty: bool | None
    labels: tuple[str, ...] = ()
    shard: str | None = None


def _since_error(value: object) -> ValueError:
    return ValueError(
        f"since: expected a date (2026-11-01), a date and time (2026-11-01T09:30, UTC unless "
        f"it says otherwise), a Unix time, or a duration back from now (7d, 12h, 30m, 2w), "
        f"got {value!r}"
    )


def parse_since(value: Since | None, *, now: float | None = None) -> float | None:
    """``value`` as a Unix time (``None`` stays ``None``).

    Args:
        value: See :data:`Since`.
        now: The present, for durations (default: the clock).

    Raises:
        ValueError: Text that is neither a date, a date and time nor a duration.
        TypeError: A value of another type.
    """
    if value is None:
        return None
    if now is None:
        import time

        now = time.time()
    if isinstance(value, bool):
        raise TypeError(f"since: expected a date, a datetime or a duration, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, timedelta):
        return now - value.total_seconds()
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return moment.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if not isinstance(value, str):
        raise TypeError(
            f"since: expected a date, a datetime or a duration, got {type(value).__name__}"
        )
    text = value.strip()
    match = _DURATION.fullmatch(text)
    if match is not None:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _since_error(value) from None
    return parse_since(parsed, now=now)
