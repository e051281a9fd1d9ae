"""The labels the viewer shows and takes: the store's labels of a run matched to its rows, and
a label posted by a page checked before the store records it."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from .._util._numbers import format_percent
from .._util._stats import cohen_kappa

if TYPE_CHECKING:
    from .._store import RowLabel
    from ._data import LoadedRun

__all__ = [
    "EXPORT_FIELDS",
    "LabelRequest",
    "LabelSummary",
    "RowLabels",
    "ShownLabel",
    "label_summary",
    "labels_by_row",
    "labels_csv",
    "labels_jsonl",
]

EXPORT_FIELDS = (
    "run",
    "name",
    "sample",
    "strategy",
    "repeat",
    "outcome",
    "reviewer",
    "verdict",
    "note",
    "stale",
    "labelled_at",
    "output_sha256",
)
"""The fields of an exported label, in order: the row (its run, sample, strategy, repeat
and outcome) and the label (who, what, why, whether its output changed since, when, the
output's digest)."""
_FORMULA = ("=", "+", "-", "@", "\t", "\r")

_NOTE_LENGTH = 2000
_NAME_LENGTH = 200


@dataclass(frozen=True, slots=True)
class ShownLabel:
    """A label as a row shows it.

    Attributes:
        reviewer: Who labelled the row.
        verdict: ``"pass"`` or ``"fail"``.
        note: The reviewer's note, if any.
        stale: Whether the output changed since it was labelled (shown, never used).
    """

    reviewer: str
    verdict: str
    note: str | None
    stale: bool


@dataclass(frozen=True, slots=True)
class RowLabels:
    """The labels of one row, one per reviewer.

    Attributes:
        labels: The labels, in the store's order.
    """

    labels: tuple[ShownLabel, ...]


@dataclass(frozen=True, slots=True)
class LabelSummary:
    """How far a run's rows are labelled, and how the labels agree with the verdicts.

    Attributes:
        labelled: Rows with a current label (one of their output as it is).
        rows: The run's rows.
        agreement: ``agreement with the verdicts: 90.00% of 20 labels, kappa 0.71
            [0.52, 0.90]`` (or why there is no kappa yet).
        contradicted: The positions of the rows a current label contradicts (a ``fail`` on a
            passed row, a ``pass`` on a failed one).
    """

    labelled: int
    rows: int
    agreement: str
    contradicted: frozenset[int]

    @property
    def counter(self) -> str:
        """``3 of 200 rows labelled``."""
        return f"{self.labelled} of {self.rows} rows labelled"


def label_summary(run: LoadedRun, labels: Sequence[RowLabel]) -> LabelSummary:
    """The :class:`LabelSummary` of ``run`` with its stored ``labels``."""
    outcomes = run.index.outcomes
    table = [[0, 0], [0, 0]]
    labelled: set[int] = set()
    contradicted: set[int] = set()
    for label in labels:
        position = run.position(label.key)
        if position is None or label.stale:
            continue
        labelled.add(position)
        outcome = outcomes[position]
        if outcome not in ("passed", "failed"):
            continue
        labelled_pass, found = label.verdict == "pass", outcome == "passed"
        table[0 if labelled_pass else 1][0 if found else 1] += 1
        if labelled_pass != found:
            contradicted.add(position)
    pairs = sum(map(sum, table))
    if not pairs:
        agreement = "no label of a passed or failed row yet"
    else:
        agreed = format_percent(100.0 * (table[0][0] + table[1][1]) / pairs)
        kappa = cohen_kappa(((table[0][0], table[0][1]), (table[1][0], table[1][1])))
        if kappa is None:
            said = "kappa undefined until labels and verdicts each hold both pass and fail"
        else:
            low, high = kappa.interval()
            said = f"kappa {kappa.kappa:.2f} [{low:.2f}, {high:.2f}]"
        agreement = f"agreement with the verdicts: {agreed} of {pairs} labels, {said}"
    return LabelSummary(len(labelled), len(outcomes), agreement, frozenset(contradicted))


def labels_by_row(run: LoadedRun, labels: Sequence[RowLabel]) -> dict[int, RowLabels]:
    """The stored ``labels`` of ``run``'s rows, by the row's position in the run."""
    found: dict[int, list[ShownLabel]] = {}
    for label in labels:
        position = run.position(label.key)
        if position is not None:
            found.setdefault(position, []).append(
                ShownLabel(label.reviewer, label.verdict, label.note, label.stale)
            )
    return {position: RowLabels(tuple(labels)) for position, labels in found.items()}


def _exported(run: LoadedRun, labels: Sequence[RowLabel]) -> list[dict[str, Any]]:
    outcomes = run.index.outcomes
    found = []
    for label in labels:
        position = run.position(label.key)
        stored = label.label
        found.append(
            {
                "run": run.id,
                "name": run.name,
                "sample": label.sample,
                "strategy": label.strategy,
                "repeat": label.repeat,
                "outcome": None if position is None else outcomes[position],
                "reviewer": stored.reviewer,
                "verdict": stored.verdict,
                "note": stored.note,
                "stale": label.stale,
                "labelled_at": datetime.fromtimestamp(stored.labelled_at, UTC).isoformat(),
                "output_sha256": stored.output_sha256,
            }
        )
    return found


def labels_jsonl(run: LoadedRun, labels: Sequence[RowLabel]) -> bytes:
    """The ``labels`` of ``run``'s rows as JSON Lines, one object of :data:`EXPORT_FIELDS`
    a label."""
    return b"".join(orjson.dumps(item) + b"\n" for item in _exported(run, labels))


def _cell(value: object) -> str:
    if value is None:
        return ""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def labels_csv(run: LoadedRun, labels: Sequence[RowLabel]) -> str:
    """The ``labels`` of ``run``'s rows as CSV with a header of :data:`EXPORT_FIELDS`; a
    cell a spreadsheet would take for a formula (``=``, ``+``, ``-``, ``@``…) starts with
    ``'``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(EXPORT_FIELDS)
    for item in _exported(run, labels):
        writer.writerow([_cell(item[name]) for name in EXPORT_FIELDS])
    return out.getvalue()


def _text(body: Mapping[str, Any], key: str, *, limit: int, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"{key!r} must be {'non-empty ' if required else ''}text, got {value!r}")
    if len(value) > limit:
        raise ValueError(f"{key!r} is {len(value)} characters long; at most {limit} are kept")
    return value


@dataclass(frozen=True, slots=True)
class LabelRequest:
    """A label a page posts: which row of which run, and the reviewer's verdict and note.

    Attributes:
        run: The run's id.
        sample: The row's sample.
        strategy: The row's strategy (``None`` for a row without one).
        repeat: The row's repeat.
        reviewer: Who labels.
        verdict: ``"pass"`` or ``"fail"``.
        note: The note, if any.
    """

    run: str
    sample: str
    strategy: str | None
    repeat: int
    reviewer: str
    verdict: str
    note: str | None

    @classmethod
    def parse(cls, body: object) -> LabelRequest:
        """The request in a posted JSON body.

        Raises:
            ValueError: A field missing, of the wrong type or too long (the message names it).
        """
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        repeat = body.get("repeat", 0)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
            raise ValueError(f"'repeat' must be an integer >= 0, got {repeat!r}")
        verdict = body.get("verdict")
        if verdict not in ("pass", "fail"):
            raise ValueError(f"'verdict' must be 'pass' or 'fail', got {verdict!r}")
        note = _text(body, "note", limit=_NOTE_LENGTH, required=False)
        return cls(
            run=str(_text(body, "run", limit=_NAME_LENGTH)),
            sample=str(_text(body, "sample", limit=100_000)),
            strategy=_text(body, "strategy", limit=100_000, required=False),
            repeat=repeat,
            reviewer=str(_text(body, "reviewer", limit=_NAME_LENGTH)).strip(),
            verdict=verdict,
            note=(note or "").strip() or None,
        )
