"""A run's rows in the store: their columns, and their summary.

A run's summary (counts, score, interval, per tag and per strategy) is the report's. A saved
report gives its own (:func:`summary_of`); a run stored row by row, as it finishes, is
summarised by SQL from its stored rows when it ends, or at each read if it never ended
(:func:`summarise`), with the sums the report's clustered interval is made of (samples are
the clusters; see ``aeval._util._stats``): per sample n (rows), s (rows passed) and its value
v (s, or n·s / applicable rows when some row is not applicable; no value when none applies),
then over the samples with a value count, Σn, Σv, Σv², Σv·n and Σn². Both give the same
numbers as the report rebuilt from the rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._reporting._codec import row_line
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow, Outcome
from .._reporting._values import rule_score
from .._util._stats import ClusteredMean

__all__ = [
    "EncodedRow",
    "Group",
    "RowEncoder",
    "Summary",
    "row_range",
    "summarise",
    "summary_of",
]

_ROW_BITS = 32

EncodedRow = tuple[str, int, int, str | None, str, float | None, str | None, str]
"""sample, idx, repeat, strategy, outcome, score, tags, data: the columns of one row."""

_PASSED = f"sum(outcome = '{Outcome.PASSED.value}')"
_INAPPLICABLE = f"sum(outcome = '{Outcome.NOT_APPLICABLE.value}')"
_CLUSTER_SUMS = (
    "sum(n), sum(s), sum(na), count(v), sum(CASE WHEN v IS NULL THEN 0 ELSE n END), sum(v), "
    "sum(v * v), sum(v * n), sum(CASE WHEN v IS NULL THEN 0 ELSE n * n END)"
)
"""Over clusters of n rows, s passed, na not applicable and value v (the score rule of
``aeval._reporting._counters.add_cluster``): rows, passed, not applicable, then the sums of
the clusters with a value."""
_VALUE = "CASE WHEN na = 0 THEN s WHEN na < n THEN s * 1.0 * n / (n - na) END AS v"


def row_range(seq: int) -> tuple[int, int]:
    """The first and last row id a run's rows may have."""
    first = seq << _ROW_BITS
    return first, first | ((1 << _ROW_BITS) - 1)


class RowEncoder:
    """Turns rows into the store's columns, and notes the model names their metadata gives.

    ``data`` is the row's ``rows.jsonl`` line (:func:`aeval.row_to_dict`), so a stored run
    reads back with :func:`aeval.row_from_dict`, and ``SELECT data`` is a ``rows.jsonl``.
    """

    __slots__ = ("_tags", "models")

    def __init__(self) -> None:
        self._tags: dict[tuple[str, ...], str | None] = {(): None}
        self.models: dict[str, None] = {}

    def __call__(self, row: EvaluationRow) -> EncodedRow:
        tags = row.sample.tags
        text = self._tags.get(tags, "")
        if text == "":
            text = orjson.dumps(tags).decode()
            if len(self._tags) < 4096:
                self._tags[tags] = text
        if row.metadata:
            self._note_models(row.metadata)
        return (
            row.sample.name,
            row.index,
            row.repeat,
            row.strategy,
            row.outcome.value,
            row.score,
            text,
            row_line(row)[:-1].decode(),
        )

    def _note_models(self, metadata: Mapping[str, Any]) -> None:
        for key, value in metadata.items():
            if (key == "model" or key.endswith("_model")) and isinstance(value, str) and value:
                self.models.setdefault(value, None)


@dataclass(slots=True)
class _Sums:
    rows: int = 0
    passed: int = 0
    not_applicable: int = 0
    clusters: int = 0
    scored_rows: int = 0
    total: float = 0
    squares: float = 0
    cross: float = 0
    sizes: int = 0

    def add(self, values: Sequence[Any]) -> None:
        self.rows += values[0] or 0
        self.passed += values[1] or 0
        self.not_applicable += values[2] or 0
        self.clusters += values[3] or 0
        self.scored_rows += values[4] or 0
        self.total += values[5] or 0
        self.squares += values[6] or 0
        self.cross += values[7] or 0
        self.sizes += values[8] or 0

    def moments(self) -> ClusteredMean:
        return ClusteredMean(
            self.scored_rows,
            float(self.total),
            self.clusters,
            float(self.squares),
            float(self.cross),
            float(self.sizes),
        )


@dataclass(frozen=True, slots=True)
class Group:
    """The counts, score and 95% interval (percent) of some of a run's rows."""

    rows: int
    passed: int
    samples: int
    score: float
    interval: tuple[float, float]

    @classmethod
    def of(cls, sums: _Sums) -> Group:
        """The group whose cluster sums are ``sums``."""
        moments = sums.moments()
        low, high = moments.interval(0.95)
        score = rule_score(sums.passed, sums.rows, sums.not_applicable, moments)
        return cls(sums.rows, sums.passed, sums.clusters, score, (100.0 * low, 100.0 * high))


@dataclass(frozen=True, slots=True)
class Summary:
    """A run's rows summarised: overall, rows per outcome, and per (kind, key) group."""

    overall: Group
    counts: Mapping[str, int]
    groups: Mapping[tuple[str, str], Group] = field(default_factory=dict)


def summarise(connection: sqlite3.Connection, seq: int) -> Summary:
    """Counts and scores of a run's rows, overall, per strategy and per tag (see module doc)."""
    first, last = row_range(seq)
    where = "WHERE id BETWEEN ? AND ?"
    outcomes = [outcome.value for outcome in Outcome]
    per_outcome = ", ".join(f"sum(outcome = '{name}') AS o{i}" for i, name in enumerate(outcomes))
    totals = ", ".join(f"sum(o{i})" for i in range(len(outcomes)))
    found = connection.execute(
        f"SELECT {_CLUSTER_SUMS}, {totals} FROM (SELECT *, {_VALUE} FROM (SELECT count(*) AS n, "
        f"{_PASSED} AS s, {_INAPPLICABLE} AS na, {per_outcome} FROM rows {where} GROUP BY idx))",
        (first, last),
    ).fetchone()
    overall = _Sums()
    overall.add(found[:9])
    counts = {name: found[9 + i] or 0 for i, name in enumerate(outcomes)}
    groups: dict[tuple[str, str], _Sums] = {}
    for kind, column in (("strategy", "strategy"), ("tag", "tags")):
        found = connection.execute(
            f"SELECT key, {_CLUSTER_SUMS} FROM (SELECT *, {_VALUE} FROM (SELECT {column} AS key, "
            f"count(*) AS n, {_PASSED} AS s, {_INAPPLICABLE} AS na FROM rows {where} "
            f"AND {column} IS NOT NULL GROUP BY idx, {column})) GROUP BY key",
            (first, last),
        )
        for key, *values in found:
            for name in orjson.loads(key) if kind == "tag" else (key,):
                groups.setdefault((kind, name), _Sums()).add(values)
    return Summary(Group.of(overall), counts, {key: Group.of(sums) for key, sums in groups.items()})


def summary_of(report: EvaluationReport) -> Summary:
    """The summary of a report's rows (samples are counted as its interval's clusters)."""
    groups: dict[tuple[str, str], Group] = {}
    for tag, stats in report.tag_statistics.items():
        groups[("tag", tag)] = Group(
            stats.total, stats.passed, stats.samples, stats.score, stats.confidence_interval()
        )
    for name, strategy in report.strategy_statistics.items():
        groups[("strategy", name)] = Group(
            strategy.total,
            strategy.passed,
            strategy.moments.clusters,
            strategy.score,
            strategy.confidence_interval(),
        )
    overall = Group(
        report.evaluation_count,
        report.passed_count,
        report.moments.clusters,
        report.score,
        report.confidence_interval(),
    )
    counts = {outcome.value: count for outcome, count in report.counts.items()}
    return Summary(overall, counts, groups)
