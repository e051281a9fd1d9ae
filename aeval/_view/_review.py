"""The labels the viewer shows and takes: the store's labels of a run matched to its rows, and
a label posted by a page checked before the store records it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._store import RunStore
    from ._data import LoadedRun

__all__ = ["LabelRequest", "RowLabels", "ShownLabel", "labels_by_row"]

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


async def labels_by_row(store: RunStore, run: LoadedRun) -> dict[int, RowLabels]:
    """The labels of ``run``'s rows, by the row's position in :attr:`LoadedRun.rows`."""
    positions = run.where
    found: dict[int, list[ShownLabel]] = {}
    for label in await store.labels(run.id):
        position = positions.get(label.key)
        if position is not None:
            found.setdefault(position, []).append(
                ShownLabel(label.reviewer, label.verdict, label.note, label.stale)
            )
    return {position: RowLabels(tuple(labels)) for position, labels in found.items()}


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
