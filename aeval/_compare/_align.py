"""Aligning two runs: each side's rows grouped by (sample name, strategy).

A sample is known by its name in both runs; within one run two different samples (different
parameters or expected output) under one name cannot be told apart, so that is an error that
names them. The same sample met twice in one run (a suite whose tests share a dataset) is
one sample: its rows join as more repeats.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from .._exceptions import ComparisonError
from .._reporting._results import EvaluationRow
from .._util._jsonsafe import dumps

__all__ = ["PairKey", "SideRows", "group_rows"]

_NAMES_SHOWN = 10


@dataclass(frozen=True, slots=True, order=True)
class PairKey:
    """What aligns the rows of two runs: a sample's name and a strategy's.

    Attributes:
        sample: The sample's name.
        strategy: The strategy's name (``None`` for the row of a run without strategies).
    """

    sample: str
    strategy: str | None

    def __str__(self) -> str:
        return self.sample if self.strategy is None else f"{self.sample} [{self.strategy}]"


@dataclass(frozen=True, slots=True)
class SideRows:
    """One side of a comparison, grouped.

    Attributes:
        role: ``"baseline"`` or ``"candidate"``.
        label: Where the side came from (a file, a run), for messages.
        pairs: The rows of each (sample, strategy) pair, in the run's order.
        tags: Each sample's tags (the union over its rows).
        fingerprints: Each sample's parameters and expected output, as bytes.
    """

    role: str
    label: str
    pairs: dict[PairKey, tuple[EvaluationRow, ...]]
    tags: dict[str, frozenset[str]]
    fingerprints: dict[str, bytes]


def _fingerprint(row: EvaluationRow) -> bytes:
    params = row.sample.parameters
    content = [list(params.names), list(params.values), row.sample.expected_output]
    return dumps(content, option=orjson.OPT_SORT_KEYS)[0]


def group_rows(rows: Iterable[EvaluationRow], *, role: str, label: str) -> SideRows:
    """Group ``rows`` by (sample name, strategy).

    Raises:
        ComparisonError: Two different samples share a name (the message names them).
    """
    pairs: dict[PairKey, list[EvaluationRow]] = {}
    tags: dict[str, set[str]] = {}
    fingerprints: dict[str, bytes] = {}
    clashes: dict[str, dict[bytes, int]] = {}
    for row in sorted(rows, key=lambda row: row.sort_key):
        name = row.name
        key = PairKey(name, row.strategy)
        pairs.setdefault(key, []).append(row)
        tags.setdefault(name, set()).update(row.tags)
        found_print = _fingerprint(row)
        known = fingerprints.setdefault(name, found_print)
        if known != found_print:
            seen = clashes.setdefault(name, {known: -1})
            seen.setdefault(found_print, row.index)
    if clashes:
        raise ComparisonError(_duplicates_message(role, label, clashes, pairs), side=role)
    return SideRows(
        role=role,
        label=label,
        pairs={key: tuple(group) for key, group in pairs.items()},
        tags={name: frozenset(found) for name, found in tags.items()},
        fingerprints=fingerprints,
    )


def _duplicates_message(
    role: str,
    label: str,
    clashes: dict[str, dict[bytes, int]],
    pairs: dict[PairKey, list[EvaluationRow]],
) -> str:
    first_index = {key.sample: group[0].index for key, group in pairs.items()}
    described = []
    for name, found in list(clashes.items())[:_NAMES_SHOWN]:
        positions = sorted({first_index[name], *(i for i in found.values() if i >= 0)})
        where = ", ".join(str(i + 1) for i in positions)
        described.append(f"{name!r} ({len(found)} different samples, at positions {where})")
    more = len(clashes) - _NAMES_SHOWN
    if more > 0:
        described.append(f"and {more} more")
    return (
        f"the {role} ({label}) has different samples under one name: {'; '.join(described)}. "
        "Runs are aligned by sample name: give each sample a unique name and run again."
    )
