"""A stored run read a page at a time (for ``aeval view``): its rows' order and outcomes from
their columns, its header figures from SQL sums, and only the rows a page shows decoded.

A run's :class:`RunIndex` holds, per row, its id, outcome and ``(sample, repeat, strategy)``
in the order of the HTML report (rows that did not pass first, each group in report order:
sample, repeat, then strategy order), and a report with the run's header, counts, score,
interval and model usage but no rows. Paging, the outcome filters and the counts are read from
it; a search asks SQLite for the rows that may match (:func:`search_candidates`, with
:func:`unlike_rows`) and a review pick for the rows that may qualify (:func:`pick_ids`), then
decodes those alone and applies the exact test. :class:`RunPages` is the viewer's access.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from .._conversation._codec import TAG, TRANSCRIPT
from .._reporting._codec import row_from_dict
from .._reporting._counters import add_cluster
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow, Outcome
from .._reporting._values import USER_MODEL_KEY, ModelUsage, ReportParts
from .._samples._labels import REVIEW_QUEUED
from .._util._stats import ClusteredMean, MomentsCounter
from ._columns import run_info
from ._labels import RowLabel
from ._pick import DEFAULT_MARGIN, Pick, check_pick, draw, pick_rows
from ._rows import Group, row_range, summarise

if TYPE_CHECKING:
    from ._store import RunStore

__all__ = [
    "Breakdown",
    "JudgeRates",
    "RunIndex",
    "RunPages",
    "index_run",
    "pick_ids",
    "read_lines",
    "run_breakdown",
    "read_rows",
    "run_stamp",
    "search_candidates",
    "search_pieces",
    "unlike_rows",
]

Key = tuple[str, int, str | None]
Stamp = tuple[float | None, int | None]

_PASSED = Outcome.PASSED.value
_NOT_APPLICABLE = Outcome.NOT_APPLICABLE.value
_CHUNK = 500
_USAGE = ("retries", "prompt_tokens", "completion_tokens", "cost")
_PIECE = re.compile(r"[a-z0-9]+")
_ESCAPE = re.compile(r"[xu][0-9a-f]")
_SHOWN_ONLY = ("function", "none")
_LOWERED_TO_ASCII = ("\u0130", "\u212a")
"""The characters outside ASCII whose ``str.lower()`` holds an ASCII letter (İ, the Kelvin
sign), which ``LIKE`` does not match with that letter."""
_NOT_TEXT = (
    "instr(CAST(data AS BLOB), CAST(',\"{key}\":' AS BLOB)) NOT IN "
    '(instr(CAST(data AS BLOB), CAST(\',"{key}":"\' AS BLOB)), '
    "instr(CAST(data AS BLOB), CAST(',\"{key}\":null,' AS BLOB)))"
)
"""Whether a row's top-level ``key`` (``output``, ``expected_output``) is neither text nor
null: a stored line is ``row_to_dict`` in its key order (name, index, repeat, position,
strategy, outcome, score, output, expected_output…), and ``,"`` never occurs inside a JSON
string (its quotes are escaped), so the first ``,"output":`` is the row's own once the keys
before it (never nested) are passed, and the first ``,"expected_output":`` follows a text or
null output."""


@dataclass(frozen=True, slots=True)
class RunIndex:
    """A stored run's rows in the order its pages show them, with what the filters read.

    Attributes:
        id: The run's id.
        name: The run's name.
        seq: The run's number in the store.
        head: A report with the run's header, counts, score, interval and model usage, and
            no rows (``holds_all_rows`` is false).
        ids: The rows' ids: those that did not pass, then those that passed, each in report
            order (the HTML report's order); a row's *position* is its place here.
        outcomes: Each position's outcome (``"passed"``, ``"failed"``…).
        samples: Each position's sample.
        repeats: Each position's repeat.
        strategies: Each position's strategy.
        order: The positions in report order.
        flaky: The positions whose (sample, strategy) repeats disagree.
        repeated: Whether the run repeated samples.
        stamp: The run's end and last row id when read (a run still written changes it).
        where: Each row id's position.
    """

    id: str
    name: str
    seq: int
    head: EvaluationReport
    ids: tuple[int, ...]
    outcomes: tuple[str, ...]
    samples: tuple[str, ...]
    repeats: tuple[int, ...]
    strategies: tuple[str | None, ...]
    order: tuple[int, ...]
    flaky: frozenset[int]
    repeated: bool
    stamp: Stamp
    where: Mapping[int, int] = field(repr=False)

    def keys(self) -> Iterable[Key]:
        """Each position's ``(sample, repeat, strategy)``, in order."""
        return zip(self.samples, self.repeats, self.strategies, strict=True)

    @property
    def finished(self) -> bool:
        """Whether the run's end is recorded (no row will be added)."""
        return self.stamp[0] is not None

    def counts(self, only: Iterable[int] | None = None) -> dict[str, int]:
        """Rows per outcome, ``flaky``, ``all`` and ``not-passed`` (among the positions
        ``only``, when given)."""
        counts = {outcome.value: 0 for outcome in Outcome}
        positions = range(len(self.ids)) if only is None else list(only)
        outcomes = self.outcomes
        for position in positions:
            counts[outcomes[position]] += 1
        counts["flaky"] = len(self.flaky.intersection(positions))
        counts["all"] = len(positions)
        counts["not-passed"] = counts["all"] - counts[_PASSED] - counts[_NOT_APPLICABLE]
        return counts


def run_stamp(connection: sqlite3.Connection, seq: int) -> Stamp:
    """The run's end (``None`` while it is written) and its last row id (its primary key
    range, read in log time)."""
    first, last = row_range(seq)
    finished = connection.execute("SELECT finished_at FROM runs WHERE seq = ?", (seq,)).fetchone()
    found = connection.execute(
        "SELECT max(id) FROM rows WHERE id BETWEEN ? AND ?", (first, last)
    ).fetchone()
    return (None if finished is None else finished[0]), found[0]


def _strategy_positions(connection: sqlite3.Connection, first: int, last: int) -> dict[int, int]:
    """Each row's strategy position (read only when two rows share a sample and repeat)."""
    found = connection.execute(
        "SELECT id, json_extract(data, '$.position') FROM rows WHERE id BETWEEN ? AND ?",
        (first, last),
    )
    return {row_id: position or 0 for row_id, position in found}


def _sums(path: str) -> str:
    return ", ".join(
        f"sum(CASE WHEN json_type(data, '{path}.{key}') IN ('integer', 'real') "
        f"THEN json_extract(data, '{path}.{key}') END)"
        for key in _USAGE
    )


def _usage(connection: sqlite3.Connection, first: int, last: int) -> ModelUsage:
    """What the rows' metadata say model calls cost, summed as the aggregator sums them
    (the strategies' keys, and the simulated user's under ``user_model``)."""
    user = f"$.metadata.{USER_MODEL_KEY}"
    found = connection.execute(
        f"SELECT {_sums('$.metadata')}, {_sums(user)}, "
        f"sum(CASE WHEN json_type(data, '{user}.calls') = 'integer' "
        f"THEN json_extract(data, '{user}.calls') END) "
        f"FROM rows WHERE id BETWEEN ? AND ? AND data LIKE '%\"metadata\":%'",
        (first, last),
    ).fetchone()
    sums = [value or 0 for value in found]
    retries, prompt, completion, cost = (a + b for a, b in zip(sums[:4], sums[4:8], strict=True))
    return ModelUsage(
        retries=retries,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=float(cost),
        user_model_calls=sums[8],
    )


def _conversations(connection: sqlite3.Connection, first: int, last: int) -> dict[str, int]:
    """Conversations per ending (a transcript output's, on each sample and repeat's first
    strategy), in the order the rows first show each ending."""
    found: list[tuple[str, int]] = connection.execute(
        "SELECT json_extract(data, '$.output.ended'), count(*) FROM rows "
        "WHERE id BETWEEN ? AND ? AND data LIKE ? "
        f"AND json_extract(data, '$.output.\"{TAG}\"') = ? "
        "AND json_extract(data, '$.position') = 0 GROUP BY 1 ORDER BY min(id)",
        (first, last, f'%"{TAG}":"{TRANSCRIPT}"%', TRANSCRIPT),
    ).fetchall()
    return dict(found)


def _moments(records: Sequence[tuple[Any, ...]]) -> tuple[ClusteredMean, dict[str, int], bool]:
    """The clustered sums of the rows' pass/fail by the report's score rule (samples are the
    clusters; see ``_rows``), the rows per outcome, and whether two rows share a (sample,
    repeat); ``records`` are in sample order."""
    counts = dict.fromkeys((outcome.value for outcome in Outcome), 0)
    summed = MomentsCounter()
    n = passed = applicable = 0
    shared = False
    sample = call = None
    for record in records:
        outcome = record[3]
        counts[outcome] += 1
        if record[1] != sample:
            if n:
                add_cluster(summed, n, applicable, passed)
            sample, n, passed, applicable = record[1], 0, 0, 0
        elif record[2] == call:
            shared = True
        call = record[2]
        n += 1
        passed += outcome == _PASSED
        applicable += outcome != _NOT_APPLICABLE
    if n:
        add_cluster(summed, n, applicable, passed)
    return summed.freeze(), counts, shared


def _call_time(connection: sqlite3.Connection, first: int, last: int) -> float:
    found = connection.execute(
        "SELECT sum(json_extract(data, '$.duration')) FROM rows WHERE id IN "
        "(SELECT min(id) FROM rows WHERE id BETWEEN ? AND ? GROUP BY idx, repeat)",
        (first, last),
    ).fetchone()
    return float(found[0] or 0.0)


def _flaky(records: Sequence[tuple[Any, ...]], where: Mapping[int, int]) -> frozenset[int]:
    pairs: dict[tuple[object, object], list[int]] = {}
    passed: dict[tuple[object, object], int] = {}
    applicable: dict[tuple[object, object], int] = {}
    for record in records:
        pair = (record[1], record[5])
        pairs.setdefault(pair, []).append(where[record[0]])
        passed[pair] = passed.get(pair, 0) + (record[3] == _PASSED)
        applicable[pair] = applicable.get(pair, 0) + (record[3] != _NOT_APPLICABLE)
    return frozenset(
        position
        for pair, positions in pairs.items()
        if 0 < passed[pair] < applicable[pair]
        for position in positions
    )


def index_run(connection: sqlite3.Connection, seq: int, run_id: str) -> RunIndex:
    """Read the run ``seq``'s index: its rows' columns (not their data) and its header's
    figures, from SQL.

    Raises:
        ValueError: The run's header or summary cannot be read.
    """
    first, last = row_range(seq)
    stamp = run_stamp(connection, seq)
    name, header = connection.execute(
        "SELECT name, header FROM runs WHERE seq = ?", (seq,)
    ).fetchone()
    info = run_info(header)
    records: list[tuple[Any, ...]] = connection.execute(
        "SELECT id, idx, repeat, outcome, sample, strategy FROM rows WHERE id BETWEEN ? AND ?",
        (first, last),
    ).fetchall()
    records.sort(key=lambda r: (r[1], r[2], r[0]))
    moments, counts, shared = _moments(records)
    if shared:
        positions = _strategy_positions(connection, first, last)
        records.sort(key=lambda r: (r[1], r[2], positions[r[0]], r[0]))
    shown = (
        [r for r in records if r[3] != _PASSED and r[3] != _NOT_APPLICABLE]
        + [r for r in records if r[3] == _NOT_APPLICABLE]
        + [r for r in records if r[3] == _PASSED]
    )
    columns = list(zip(*shown, strict=True)) or [(), (), (), (), (), ()]
    where = dict(zip(columns[0], range(len(shown)), strict=True))
    repeated = any(columns[2])
    head = EvaluationReport.from_parts(
        ReportParts(
            rows=(),
            counts={outcome: counts[outcome.value] for outcome in Outcome},
            tags={},
            strategies={},
            function_errors=0,
            calls=0,
            samples=moments.clusters,
            moments=moments,
            run=info,
            holds_all_rows=False,
            usage=_usage(connection, first, last),
            repeats=None,
            call_time=_call_time(connection, first, last) if info.started_at is None else 0.0,
            conversations=_conversations(connection, first, last),
        )
    )
    return RunIndex(
        id=run_id,
        name=name,
        seq=seq,
        head=head,
        ids=columns[0],
        outcomes=columns[3],
        samples=columns[4],
        repeats=columns[2],
        strategies=columns[5],
        order=tuple(map(where.__getitem__, [record[0] for record in records])),
        flaky=_flaky(records, where) if repeated else frozenset(),
        repeated=repeated,
        stamp=stamp,
        where=where,
    )


def read_rows(connection: sqlite3.Connection, ids: Iterable[int]) -> dict[int, EvaluationRow]:
    """The rows ``ids``, decoded, by id.

    Raises:
        ValueError: A row cannot be read (the message names it).
    """
    wanted = list(ids)
    rows: dict[int, EvaluationRow] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        found = connection.execute(
            f"SELECT id, data FROM rows WHERE id IN ({', '.join('?' * len(chunk))})", chunk
        )
        for row_id, data in found:
            try:
                rows[row_id] = row_from_dict(orjson.loads(data))
            except (ValueError, TypeError, orjson.JSONDecodeError) as exc:
                number = (row_id & 0xFFFFFFFF) + 1
                raise ValueError(f"row {number}: {exc}") from exc
    return rows


def read_lines(connection: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    """The stored lines (``rows.jsonl`` lines) of the rows ``ids``, by id."""
    wanted = list(ids)
    lines: dict[int, str] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        lines.update(
            connection.execute(
                f"SELECT id, data FROM rows WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            )
        )
    return lines


def search_pieces(terms: Iterable[str]) -> list[str]:
    """The pieces of the (lowercased) search words that a row whose search text holds the
    word holds in its stored line too, when its output and expected output are text or
    null: runs of ASCII letters and digits, but those its other values' text may show alone
    (``function`` for a row without a strategy; ``None``, ``07`` of ``1e-07``, ``x01`` or
    ``u200b`` of an escape, in the text of a parameter that is a list or a dict)."""
    pieces: list[str] = []
    for term in terms:
        for piece in _PIECE.findall(term):
            if any(piece in word for word in _SHOWN_ONLY) or piece.startswith("0"):
                continue
            if _ESCAPE.match(piece) is None and piece not in pieces:
                pieces.append(piece)
    return pieces


def search_candidates(
    connection: sqlite3.Connection, seq: int, terms: Iterable[str]
) -> frozenset[int] | None:
    """The ids of the rows of run ``seq`` whose stored line holds every piece of ``terms``
    (:func:`search_pieces`; ``LIKE`` ignores the case of ASCII letters, as ``str.lower``
    does); ``None`` when no word narrows them. With :func:`unlike_rows`, a superset of the
    rows whose search text holds every word: the caller tests each."""
    pieces = search_pieces(terms)
    if not pieces:
        return None
    first, last = row_range(seq)
    found = connection.execute(
        "SELECT id FROM rows WHERE id BETWEEN ? AND ? AND "
        + " AND ".join("data LIKE ?" for _ in pieces),
        (first, last, *(f"%{piece}%" for piece in pieces)),
    )
    return frozenset(row_id for (row_id,) in found)


def unlike_rows(connection: sqlite3.Connection, seq: int) -> frozenset[int]:
    """The ids of the rows of run ``seq`` whose search text may hold words their stored line
    lacks: an output or expected output that is neither text nor null (a list, a dict, a
    number, a transcript: its text is not its JSON), or a character whose lowercase is ASCII
    (İ, K), which ``LIKE`` does not match with its ASCII letter."""
    first, last = row_range(seq)
    found = connection.execute(
        f"SELECT id FROM rows WHERE id BETWEEN ? AND ? AND ({_NOT_TEXT.format(key='output')} "
        f"OR {_NOT_TEXT.format(key='expected_output')} OR data LIKE ? OR data LIKE ?)",
        (first, last, *(f"%{odd}%" for odd in _LOWERED_TO_ASCII)),
    )
    return frozenset(row_id for (row_id,) in found)


def _pick_candidates(
    connection: sqlite3.Connection, seq: int, pick: Pick, margin: float
) -> set[int]:
    """The ids of the rows that may qualify for ``pick`` (disagreements, uncertain, queued)."""
    first, last = row_range(seq)
    if pick == "disagreements":
        condition = "instr(data, '\"agreement\":') > 0 OR instr(data, '\"judges\":') > 0"
        values: tuple[object, ...] = ()
    elif pick == "uncertain":
        condition = (
            "outcome NOT IN ('skipped', 'not_applicable') AND (outcome IN ('unscored', 'error') "
            "OR score IS NULL OR instr(data, '\"threshold\":') > 0 OR abs(score - 0.5) <= ?)"
        )
        values = (margin + 1e-9,)
    else:
        condition = "instr(data, ?) > 0"
        values = (orjson.dumps(REVIEW_QUEUED).decode() + ":",)
    found = connection.execute(
        f"SELECT id FROM rows WHERE id BETWEEN ? AND ? AND ({condition})", (first, last, *values)
    )
    return {row_id for (row_id,) in found}


def pick_ids(
    connection: sqlite3.Connection,
    index: RunIndex,
    *,
    pick: Pick = "all",
    sample: int | None = None,
    seed: int = 0,
    labels: Sequence[RowLabel] = (),
    margin: float = DEFAULT_MARGIN,
) -> tuple[int, ...]:
    """The ids of the rows :func:`~aeval._store.pick_rows` picks in the run of ``index``
    (same arguments), in report order: the same rows for the same seed, decoding only the
    rows that may qualify (none for ``all`` and ``failures``).

    Raises:
        ValueError: An unknown pick, a sample size below 1, a margin outside 0-1.
    """
    check_pick(pick, sample, margin)
    ids, outcomes = index.ids, index.outcomes
    chosen: list[int]
    if pick == "all":
        chosen = [ids[p] for p in index.order]
    elif pick == "failures":
        left_out = (_PASSED, Outcome.SKIPPED.value, _NOT_APPLICABLE)
        chosen = [ids[p] for p in index.order if outcomes[p] not in left_out]
    else:
        candidates = _pick_candidates(connection, index.seq, pick, margin)
        keys = {label.key for label in labels}
        if keys:
            candidates |= {ids[p] for p, key in enumerate(index.keys()) if key in keys}
        wanted = [ids[p] for p in index.order if ids[p] in candidates]
        decoded = read_rows(connection, wanted)
        rows = [decoded[i] for i in wanted]
        by_row = {id(row): row_id for row_id, row in zip(wanted, rows, strict=True)}
        picked = pick_rows(rows, pick=pick, labels=labels, margin=margin)
        chosen = [by_row[id(row)] for row in picked]
    drawn = draw(len(chosen), sample, seed)
    return tuple(chosen) if drawn is None else tuple(chosen[i] for i in drawn)


@dataclass(frozen=True, slots=True)
class JudgeRates:
    """How the judges of one judge strategy answered over a run's rows.

    Attributes:
        verdicts: Verdicts asked of its judges.
        unreadable: First replies that could not be read (parse failures).
        reasked: Replies asked again for.
    """

    verdicts: int
    unreadable: int
    reasked: int


@dataclass(frozen=True, slots=True)
class Breakdown:
    """A run's scores per strategy and per tag, and its judges' parse-failure and re-ask
    counts, from its stored rows (a run still written included).

    Attributes:
        strategies: The score of each strategy's rows, by strategy.
        tags: The score of the rows of each tag's samples, by tag.
        judges: The judges' counts, by judge strategy.
    """

    strategies: Mapping[str, Group]
    tags: Mapping[str, Group]
    judges: Mapping[str, JudgeRates]


def run_breakdown(connection: sqlite3.Connection, seq: int) -> Breakdown:
    """The :class:`Breakdown` of the run ``seq``, in SQL over its rows (only the rows whose
    metadata records judges are read as JSON)."""
    groups = summarise(connection, seq).groups
    first, last = row_range(seq)
    found = connection.execute(
        "SELECT rows.strategy, count(*), sum(coalesce(json_extract(j.value, '$.unreadable'), 0)), "
        "sum(coalesce(json_extract(j.value, '$.reasked'), 0)) "
        "FROM rows, json_each(rows.data, '$.metadata.judges') AS j "
        "WHERE rows.id BETWEEN ? AND ? AND instr(rows.data, '\"judges\"') > 0 "
        "AND json_type(rows.data, '$.metadata.judges') = 'array' "
        "AND j.type = 'object' GROUP BY rows.strategy ORDER BY rows.strategy",
        (first, last),
    ).fetchall()
    return Breakdown(
        strategies={key: g for (kind, key), g in sorted(groups.items()) if kind == "strategy"},
        tags={key: g for (kind, key), g in sorted(groups.items()) if kind == "tag"},
        judges={
            strategy or "function": JudgeRates(int(n), int(bad or 0), int(again or 0))
            for strategy, n, bad, again in found
        },
    )


class RunPages:
    """A stored run read a page at a time: the viewer's access to the store.

    Args:
        store: The run store.
    """

    def __init__(self, store: RunStore) -> None:
        self._store = store

    async def index(self, ref: str) -> RunIndex:
        """The index of the run ``ref`` names (shard runs counted).

        Raises:
            RunNotFoundError: No run matches.
            StoreError: The run cannot be read.
        """
        return await self._store._read_run(ref, index_run)

    async def breakdown(self, index: RunIndex) -> Breakdown:
        """The run's scores per strategy and per tag and its judges' counts."""
        return await self._store._read_run(index.id, lambda c, _, __: run_breakdown(c, index.seq))

    async def scores(self, index: RunIndex) -> tuple[float | None, ...]:
        """Each position's score (``None`` for a row without one), read from the rows' column."""

        def read(connection: sqlite3.Connection, _: int, __: str) -> tuple[float | None, ...]:
            first, last = row_range(index.seq)
            found = dict(
                connection.execute(
                    "SELECT id, score FROM rows WHERE id BETWEEN ? AND ?", (first, last)
                ).fetchall()
            )
            return tuple(found.get(row_id) for row_id in index.ids)

        return await self._store._read_run(index.id, read)

    async def labels_made(self) -> dict[str, int]:
        """How many labels were made in each run, by run id (runs without any left out)."""
        found = await self._store._read_store(
            lambda c: c.execute("SELECT run, count(*) FROM labels GROUP BY run").fetchall()
        )
        return {run: int(count) for run, count in found or ()}

    async def stamp(self, run_id: str) -> Stamp:
        """The run's end and last row id now (see :attr:`RunIndex.stamp`)."""
        return await self._store._read_run(run_id, lambda c, seq, _: run_stamp(c, seq))

    async def rows(self, index: RunIndex, ids: Sequence[int]) -> dict[int, EvaluationRow]:
        """The rows ``ids`` of the run of ``index``, decoded, by id."""
        if not ids:
            return {}
        return await self._store._read_run(index.id, lambda c, _, __: read_rows(c, ids))

    async def lines(self, index: RunIndex, ids: Sequence[int]) -> dict[int, str]:
        """The stored lines of the rows ``ids`` of the run of ``index``, by id."""
        return await self._store._read_run(index.id, lambda c, _, __: read_lines(c, ids))

    async def unlike(self, index: RunIndex) -> frozenset[int]:
        """The ids of the rows a search always tests (see :func:`unlike_rows`)."""
        return await self._store._read_run(index.id, lambda c, seq, _: unlike_rows(c, seq))

    async def candidates(self, index: RunIndex, terms: Sequence[str]) -> frozenset[int] | None:
        """The ids of the rows whose stored line holds every word of ``terms`` (see
        :func:`search_candidates`; add :meth:`unlike`'s)."""
        return await self._store._read_run(
            index.id, lambda c, seq, _: search_candidates(c, seq, terms)
        )

    async def pick(
        self,
        index: RunIndex,
        *,
        pick: Pick = "all",
        sample: int | None = None,
        seed: int = 0,
        labels: Sequence[RowLabel] = (),
    ) -> tuple[int, ...]:
        """The ids of the rows ``pick_rows`` picks (see :func:`pick_ids`).

        Raises:
            ValueError: An unknown pick, a sample size below 1.
            StoreError: A row that may qualify cannot be read.
        """

        check_pick(pick, sample, DEFAULT_MARGIN)

        def call(connection: sqlite3.Connection, _: int, __: str) -> tuple[int, ...]:
            return pick_ids(connection, index, pick=pick, sample=sample, seed=seed, labels=labels)

        return await self._store._read_run(index.id, call)
