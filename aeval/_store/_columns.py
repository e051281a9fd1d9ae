"""A stored run's columns read back, checked: a damaged or hand-edited store gives an error
naming the field (the database adds the file and the run), never a summary built from garbage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from .._reporting._run_info import RunInfo
from .._util._jsonsafe import read_count, read_list, read_number, read_text
from ._rows import Group
from ._values import RunSummary

__all__ = [
    "COUNT_COLUMNS",
    "GROUP_COLUMNS",
    "RUN_HEAD",
    "run_info",
    "run_summary",
    "stored_group",
    "texts",
]

RUN_HEAD = (
    "seq",
    "id",
    "name",
    "started_at",
    "finished_at",
    "complete",
    "header",
    "git_commit",
    "git_dirty",
    "config_hash",
    "aeval_version",
    "labels",
    "models",
    "shard",
)
"""The columns of ``runs`` that describe a run, in the order :func:`run_summary` takes."""

COUNT_COLUMNS = (
    "rows",
    "passed",
    "failed",
    "unscored",
    "errors",
    "skipped",
    "samples",
    "score",
    "ci_low",
    "ci_high",
)
"""The summary columns of ``runs`` (``NULL`` until the run ends), in order."""

GROUP_COLUMNS = "rows, passed, samples, score, ci_low, ci_high"
"""The columns of a summary (a run's in ``runs``, a tag's or a strategy's in ``run_groups``),
in the order :func:`stored_group` takes them."""

_PERCENT = {"low": 0.0, "high": 100.0}


def run_info(header: object) -> RunInfo:
    """The run's header, from its JSON column.

    Raises:
        ValueError: The column is not a header (the message names the field).
    """
    return RunInfo.from_dict(orjson.loads(read_text(header, "header")))


def texts(value: object, column: str) -> tuple[str, ...]:
    """A column holding a JSON list of text (``labels``, ``models``).

    Raises:
        ValueError: The column is not such a list.
    """
    try:
        items = orjson.loads(read_text(value, column))
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"field {column!r}: not a JSON list ({exc})") from None
    return tuple(read_text(item, column) for item in read_list(items, column))


def stored_group(rows: Any, passed: Any, samples: Any, score: Any, low: Any, high: Any) -> Group:
    """A summary (overall, or of a tag or strategy) from its columns.

    Raises:
        ValueError: A column is not a count, or not a percentage.
    """
    return Group(
        read_count(rows, "rows"),
        read_count(passed, "passed"),
        read_count(samples, "samples"),
        read_number(score, "score", **_PERCENT),
        (read_number(low, "ci_low", **_PERCENT), read_number(high, "ci_high", **_PERCENT)),
    )


def run_summary(head: Sequence[Any], counts: Sequence[Any]) -> RunSummary:
    """A :class:`RunSummary` from the :data:`RUN_HEAD` and :data:`COUNT_COLUMNS` of a run.

    Raises:
        ValueError: A column holds what aeval never writes there (the message names it).
    """
    (_, run_id, name, started, finished, complete, header, commit, dirty) = head[:9]
    config_hash, version, labels, models, shard = head[9:]
    numbers = [
        read_count(value, column)
        for value, column in zip(counts[:7], COUNT_COLUMNS[:7], strict=True)
    ]
    score, low, high = (
        read_number(value, column, **_PERCENT)
        for value, column in zip(counts[7:], COUNT_COLUMNS[7:], strict=True)
    )
    info = run_info(header)
    return RunSummary(
        id=run_id,
        name=name,
        started_at=started,
        finished_at=finished,
        complete=bool(complete),
        rows=numbers[0],
        passed=numbers[1],
        failed=numbers[2],
        unscored=numbers[3],
        errors=numbers[4],
        skipped=numbers[5],
        samples=numbers[6],
        samples_expected=info.samples_expected,
        score=score,
        interval=(low, high),
        git_commit=commit,
        git_dirty=None if dirty is None else bool(dirty),
        config_hash=config_hash,
        models=texts(models, "models"),
        labels=texts(labels, "labels"),
        aeval_version=version,
        header=info,
        shard=shard,
    )
