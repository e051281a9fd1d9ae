"""Which rows of a run a reviewer looks at: all, the failures, the disagreements, the
uncertain ones, or those queued from live traffic; optionally a reproducible random share."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow, Outcome
from .._samples._labels import REVIEW_QUEUED
from ._labels import RowLabel

__all__ = [
    "DEFAULT_MARGIN",
    "PICKS",
    "REVIEW_QUEUED",
    "Pick",
    "check_pick",
    "draw",
    "is_disagreement",
    "is_uncertain",
    "judges_split",
    "pick_rows",
]

Pick = Literal["all", "failures", "disagreements", "uncertain", "queued"]
PICKS: tuple[Pick, ...] = ("all", "failures", "disagreements", "uncertain", "queued")

DEFAULT_MARGIN = 0.1
"""How near the threshold a score is uncertain (on the 0-1 score scale)."""

_DEFAULT_THRESHOLD = 0.5

Key = tuple[str, int, str | None]


def judges_split(metadata: Mapping[str, Any]) -> bool:
    """Whether a judge ensemble's row was not unanimous (its ``agreement`` below 1, or its
    judges' ``verdict`` records both passed and failed)."""
    agreement = metadata.get("agreement")
    if isinstance(agreement, int | float) and not isinstance(agreement, bool) and agreement < 1:
        return True
    records = metadata.get("judges")
    if not isinstance(records, list):
        return False
    verdicts = {record.get("verdict") for record in records if isinstance(record, Mapping)}
    return {"passed", "failed"} <= verdicts


_NOT_FAILURES = (Outcome.SKIPPED, Outcome.NOT_APPLICABLE)


def _key(row: EvaluationRow) -> Key:
    return row.name, row.repeat, row.strategy


def is_disagreement(row: EvaluationRow, labels: Sequence[RowLabel] = ()) -> bool:
    """Whether the row's judges split, or a current label's verdict is not the row's."""
    if judges_split(row.metadata):
        return True
    if row.outcome is not Outcome.PASSED and row.outcome is not Outcome.FAILED:
        return False
    passed = row.outcome is Outcome.PASSED
    return any(not found.stale and found.label.passed != passed for found in labels)


def is_uncertain(row: EvaluationRow, margin: float = DEFAULT_MARGIN) -> bool:
    """Whether the row has no verdict (unscored, error, no score) or its score is within
    ``margin`` of its threshold (the row's ``threshold`` metadata, else 0.5); never a
    skipped or a not-applicable row."""
    if row.outcome is Outcome.SKIPPED or row.outcome is Outcome.NOT_APPLICABLE:
        return False
    score = row.score
    if row.outcome is Outcome.UNSCORED or row.outcome is Outcome.ERROR or score is None:
        return True
    threshold = row.metadata.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        threshold = _DEFAULT_THRESHOLD
    return abs(score - threshold) <= margin + 1e-12


def check_pick(pick: object, sample: object, margin: object) -> None:
    """Raise ``ValueError`` for an unknown pick, a sample size below 1, a margin outside 0-1."""
    if pick not in PICKS:
        raise ValueError(f"pick is one of {', '.join(PICKS)}, got {pick!r}")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int)):
        raise ValueError(f"sample is a number of rows >= 1, got {sample!r}")
    if isinstance(sample, int) and sample < 1:
        raise ValueError(f"sample is a number of rows >= 1, got {sample!r}")
    if (
        isinstance(margin, bool)
        or not isinstance(margin, int | float)
        or not math.isfinite(margin)
        or not 0 <= margin <= 1
    ):
        raise ValueError(f"margin is a score difference between 0 and 1, got {margin!r}")


def pick_rows(
    report: EvaluationReport | Iterable[EvaluationRow],
    *,
    pick: Pick = "all",
    sample: int | None = None,
    seed: int = 0,
    labels: Iterable[RowLabel] = (),
    margin: float = DEFAULT_MARGIN,
) -> tuple[EvaluationRow, ...]:
    """The rows of a run worth a reviewer's time, in the run's order.

    Args:
        report: A report (or its rows).
        pick: ``"all"``; ``"failures"`` (rows that did not pass: failed, error, unscored);
            ``"disagreements"`` (a judge ensemble split on the row, or a current human label
            says the opposite of its verdict); ``"uncertain"`` (unscored and error rows,
            and scores within ``margin`` of the threshold); ``"queued"`` (live rows an
            ``OnlineEvaluator(review_rate=...)`` queued, not labelled yet).
        sample: At most this many rows, drawn at random among those picked.
        seed: The draw's seed: the same rows, seed and size give the same draw.
        labels: The run's labels (``await store.labels(ref)``), for ``"disagreements"``
            and ``"queued"``.
        margin: For ``"uncertain"``: how near the threshold (0-1 score) a score is.

    Raises:
        ValueError: An unknown pick, a sample size below 1, a margin outside 0-1.

    Example:
        >>> rows = pick_rows(report, pick="uncertain", sample=20, seed=7)  # doctest: +SKIP
    """
    check_pick(pick, sample, margin)
    rows = report.evaluations if isinstance(report, EvaluationReport) else tuple(report)
    by_row: dict[Key, list[RowLabel]] = {}
    for found in labels:
        by_row.setdefault(found.key, []).append(found)
    chosen: list[EvaluationRow]
    if pick == "all":
        chosen = list(rows)
    elif pick == "failures":
        chosen = [row for row in rows if not row.passed and row.outcome not in _NOT_FAILURES]
    elif pick == "disagreements":
        chosen = [row for row in rows if is_disagreement(row, by_row.get(_key(row), ()))]
    elif pick == "uncertain":
        chosen = [row for row in rows if is_uncertain(row, margin)]
    else:
        chosen = [
            row
            for row in rows
            if row.sample.metadata.get(REVIEW_QUEUED) is True
            and not any(not found.stale for found in by_row.get(_key(row), ()))
        ]
    drawn = draw(len(chosen), sample, seed)
    return tuple(chosen) if drawn is None else tuple(chosen[index] for index in drawn)


def draw(count: int, sample: int | None, seed: int) -> list[int] | None:
    """The indices (sorted) of the ``sample`` rows drawn among ``count`` picked ones with
    ``seed``; ``None`` when every one is kept (no sample, or one as large as the pick)."""
    if sample is None or sample >= count:
        return None
    return sorted(random.Random(seed).sample(range(count), sample))
