"""Human labels in the run store: a reviewer's verdict on one output of a sample.

A label judges an *output*: it is kept under the run's name, the sample, the strategy, the
SHA-256 of the output as the row codec writes it (:func:`output_digest`) and the reviewer,
with the verdict (``pass`` or ``fail``), an optional note, the time and the run it was made
in. Labelling the same output again (same name, sample, strategy, output and reviewer)
replaces the earlier label. In a run, a row's label is *current* when its output hash is the
row's, and *stale* otherwise (the output changed since the reviewer saw it): a stale label is
shown as such and never used to calibrate a judge.

This module holds the values and the SQL; :class:`~aeval.RunStore` exposes them.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from .._reporting._codec import row_line
from .._reporting._results import EvaluationRow
from .._util._jsonsafe import dumps
from ._rows import row_range

__all__ = [
    "VERDICTS",
    "Label",
    "RowLabel",
    "Verdict",
    "check_label",
    "check_row",
    "insert_label",
    "output_digest",
    "row_digest",
    "row_labels",
    "stored_digest",
]

Verdict = Literal["pass", "fail"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail")


def output_digest(output: Any) -> str:
    """The SHA-256 (hex) of an output as the row codec writes it, keys sorted.

    Give the ``output`` of a row's JSON form (a ``rows.jsonl`` line, a stored row): text,
    any JSON value, a conversation's transcript as the codec writes it. For an
    :class:`~aeval.EvaluationRow`, use :func:`row_digest`, which encodes it first.

    Example:
        >>> output_digest({"b": 1, "a": [1, "x"]}) == output_digest({"a": [1, "x"], "b": 1})
        True
    """
    data, _ = dumps(output)
    canonical = orjson.dumps(orjson.loads(data), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def row_digest(row: EvaluationRow) -> str:
    """The :func:`output_digest` of a row's output, encoded by the row codec."""
    return output_digest(orjson.loads(row_line(row))["output"])


def stored_digest(data: str | bytes) -> str:
    """The :func:`output_digest` of a stored row (its ``rows.jsonl`` line)."""
    return output_digest(orjson.loads(data).get("output"))


@dataclass(frozen=True, slots=True)
class Label:
    """A reviewer's verdict on one output of a sample, as the run store keeps it.

    Attributes:
        name: The name of the runs the label belongs to (it applies to every run of the
            name whose row has the same output).
        sample: The sample's name.
        strategy: The strategy whose row was labelled (``None`` for a row without one).
        output_sha256: The SHA-256 of the output the reviewer saw (:func:`output_digest`).
        reviewer: Who labelled it.
        verdict: ``"pass"`` or ``"fail"``.
        note: The reviewer's note, if any.
        labelled_at: When (Unix time; :attr:`time` is the UTC datetime).
        run_id: The run in which the label was made.
        repeat: The repeat of the row that was labelled.
    """

    name: str
    sample: str
    strategy: str | None
    output_sha256: str
    reviewer: str
    verdict: Verdict
    note: str | None
    labelled_at: float
    run_id: str
    repeat: int = 0

    @property
    def passed(self) -> bool:
        """Whether the verdict is ``pass``."""
        return self.verdict == "pass"

    @property
    def time(self) -> datetime:
        """When the label was made, in UTC."""
        return datetime.fromtimestamp(self.labelled_at, UTC)


@dataclass(frozen=True, slots=True)
class RowLabel:
    """A label as it stands for one row of a run.

    Attributes:
        label: The stored label.
        sample: The row's sample.
        repeat: The row's repeat.
        strategy: The row's strategy.
        index: The sample's position in the run.
        stale: Whether the row's output differs from the one labelled (the label is shown,
            never used).
    """

    label: Label
    sample: str
    repeat: int
    strategy: str | None
    index: int
    stale: bool

    @property
    def reviewer(self) -> str:
        """The label's reviewer."""
        return self.label.reviewer

    @property
    def verdict(self) -> Verdict:
        """The label's verdict."""
        return self.label.verdict

    @property
    def note(self) -> str | None:
        """The label's note."""
        return self.label.note

    @property
    def key(self) -> tuple[str, int, str | None]:
        """``(sample, repeat, strategy)``: the row."""
        return self.sample, self.repeat, self.strategy


def check_label(reviewer: object, verdict: object, note: object) -> tuple[str, Verdict, str | None]:
    """The reviewer, verdict and note of a new label, checked.

    Raises:
        ValueError: An empty reviewer, a verdict other than ``pass``/``fail``, a note that is
            not text.
    """
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ValueError(f"a label needs a reviewer (a non-empty name), got {reviewer!r}")
    word = verdict.strip().lower() if isinstance(verdict, str) else verdict
    if word not in VERDICTS:
        raise ValueError(f"a label's verdict is 'pass' or 'fail', got {verdict!r}")
    if note is not None and not isinstance(note, str):
        raise ValueError(f"a label's note is text, got {type(note).__name__}")
    text = note.strip() if isinstance(note, str) else None
    return reviewer.strip(), "pass" if word == "pass" else "fail", text or None


def check_row(sample: object, repeat: object, strategy: object) -> tuple[str, int, str | None]:
    """The row a label names, checked.

    Raises:
        ValueError: A sample that is not text, a repeat that is not an integer >= 0, a
            strategy that is neither text nor ``None``.
    """
    if not isinstance(sample, str):
        raise ValueError(f"a label names its sample by name (text), got {sample!r}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise ValueError(f"a label's repeat is an integer >= 0, got {repeat!r}")
    if strategy is not None and not isinstance(strategy, str):
        raise ValueError(f"a label's strategy is a name or None, got {strategy!r}")
    return sample, repeat, strategy


_COLUMNS = (
    "name, sample, strategy, output_sha256, reviewer, verdict, note, labelled_at, run, repeat"
)


def _label(record: Sequence[Any]) -> Label:
    name, sample, strategy, digest, reviewer, verdict, note, at, run, repeat = record
    return Label(
        name,
        sample,
        strategy or None,
        digest,
        reviewer,
        "pass" if verdict == "pass" else "fail",
        note,
        float(at),
        run,
        int(repeat),
    )


def _rows_of(
    connection: sqlite3.Connection, seq: int, sample: str, repeat: int, strategy: str | None
) -> tuple[int, str] | None:
    first, last = row_range(seq)
    found = connection.execute(
        "SELECT idx, data FROM rows WHERE id BETWEEN ? AND ? AND sample = ? AND repeat = ? "
        "AND strategy IS ? LIMIT 1",
        (first, last, sample, repeat, strategy),
    ).fetchone()
    return None if found is None else (found[0], found[1])


def _missing_row(
    connection: sqlite3.Connection,
    seq: int,
    run_id: str,
    sample: str,
    repeat: int,
    strategy: str | None,
) -> ValueError:
    first, last = row_range(seq)
    where = "id BETWEEN ? AND ?"
    found = connection.execute(
        f"SELECT DISTINCT repeat, strategy FROM rows WHERE {where} AND sample = ?",
        (first, last, sample),
    ).fetchall()
    if not found:
        samples = [
            name
            for (name,) in connection.execute(
                f"SELECT DISTINCT sample FROM rows WHERE {where} ORDER BY idx LIMIT 6",
                (first, last),
            )
        ]
        shown = ", ".join(repr(name) for name in samples[:5]) or "none"
        more = ", ..." if len(samples) > 5 else ""
        return ValueError(f"run {run_id} has no sample {sample!r} (samples: {shown}{more})")
    strategies = sorted({s or "" for _, s in found})
    if (strategy or "") not in strategies:
        shown = ", ".join(repr(s or None) for s in strategies)
        return ValueError(
            f"run {run_id}: sample {sample!r} has no row of the strategy {strategy!r} "
            f"(its strategies: {shown})"
        )
    repeats = sorted({r for r, _ in found})
    return ValueError(
        f"run {run_id}: sample {sample!r} has no repeat {repeat} (its repeats: "
        f"{', '.join(map(str, repeats))})"
    )


def insert_label(
    connection: sqlite3.Connection,
    run: tuple[int, str, str],
    row: tuple[str, int, str | None],
    reviewer: str,
    verdict: Verdict,
    note: str | None,
) -> Label:
    """Store a label on the ``row`` (sample, repeat, strategy) of ``run`` (seq, id, name);
    the output hash is computed from the stored row.

    Raises:
        ValueError: The run has no such row (the message says what it has).
    """
    seq, run_id, name = run
    sample, repeat, strategy = row
    found = _rows_of(connection, seq, sample, repeat, strategy)
    if found is None:
        raise _missing_row(connection, seq, run_id, sample, repeat, strategy)
    try:
        digest = stored_digest(found[1])
    except orjson.JSONDecodeError as exc:
        raise sqlite3.DatabaseError(f"run {run_id}: sample {sample!r}: its row: {exc}") from exc
    label = Label(
        name,
        sample,
        strategy,
        digest,
        reviewer,
        verdict,
        note,
        time.time(),
        run_id,
        repeat,
    )
    connection.execute(
        f"INSERT INTO labels ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (name, sample, strategy, reviewer, output_sha256) DO UPDATE SET "
        "verdict = excluded.verdict, note = excluded.note, "
        "labelled_at = excluded.labelled_at, run = excluded.run, repeat = excluded.repeat",
        (
            name,
            sample,
            strategy or "",
            label.output_sha256,
            reviewer,
            verdict,
            note,
            label.labelled_at,
            run_id,
            repeat,
        ),
    )
    return label


def _by_key(
    labels: Iterable[Label],
) -> dict[tuple[str, str | None], dict[str, list[Label]]]:
    grouped: dict[tuple[str, str | None], dict[str, list[Label]]] = {}
    for label in labels:
        key = (label.sample, label.strategy)
        grouped.setdefault(key, {}).setdefault(label.reviewer, []).append(label)
    return grouped


def row_labels(
    connection: sqlite3.Connection, run: tuple[int, str, str], reviewer: str | None = None
) -> tuple[RowLabel, ...]:
    """Every label that stands for a row of ``run`` (seq, id, name), in row order.

    For each row and reviewer: the reviewer's label of the row's output (current) if there
    is one, else the reviewer's latest label of the row's sample and strategy (stale).
    """
    seq, _, name = run
    where, values = "name = ?", [name]
    if reviewer is not None:
        where, values = f"{where} AND reviewer = ?", [name, reviewer]
    labels = [
        _label(record)
        for record in connection.execute(
            f"SELECT {_COLUMNS} FROM labels WHERE {where} ORDER BY labelled_at, id", values
        )
    ]
    if not labels:
        return ()
    grouped = _by_key(labels)
    first, last = row_range(seq)
    found = connection.execute(
        "SELECT idx, sample, repeat, strategy, data FROM rows WHERE id BETWEEN ? AND ? "
        f"AND sample IN (SELECT sample FROM labels WHERE {where}) ORDER BY id",
        (first, last, *values),
    )
    return tuple(_standing(found, grouped))


def _standing(
    rows: Iterable[Sequence[Any]],
    grouped: dict[tuple[str, str | None], dict[str, list[Label]]],
) -> Iterator[RowLabel]:
    for index, sample, repeat, strategy, data in rows:
        reviewers = grouped.get((sample, strategy))
        if not reviewers:
            continue
        digest = stored_digest(data)
        for labels in reviewers.values():
            current = [label for label in labels if label.output_sha256 == digest]
            chosen = current[-1] if current else labels[-1]
            yield RowLabel(chosen, sample, repeat, strategy, index, stale=not current)
