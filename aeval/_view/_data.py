"""The rows of a stored run as ``aeval view`` serves them: indexed once from the store's
columns, filtered, searched and cut into pages on the server, and only the page's rows read
and decoded, so a page of a 100,000-row run is a page, not the run."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from .._display import display_value
from .._reporting._codec import row_from_dict
from .._store._pages import RunPages
from ..formatters._header import parameters_text
from ..formatters._html_rows import ROW_FILTERS

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow
    from .._store import RunStore
    from .._store._pages import Breakdown, RunIndex

__all__ = [
    "FILTER_KEYS",
    "PAGE_ROWS",
    "LoadedRun",
    "RowPage",
    "RunCache",
    "select",
]

PAGE_ROWS = 50
"""Rows on one page of a run."""

FILTER_KEYS = frozenset(key for key, _ in ROW_FILTERS)
_APART_FROM_NOT_PASSED = frozenset({"passed", "not_applicable"})

_SEARCH_LENGTH = 4000
_SEARCH_BATCH = 2000
_SEARCHES_KEPT = 8
_REPORTS_KEPT = 10
_REPORT_ROWS = 200_000


class LoadedRun:
    """A stored run as the viewer holds it: its index (read from the store's columns, no row
    decoded), the search texts of the rows a search has decoded so far, the rows every
    search tests (``unlike``, read at the first search), the last searches' rows, and its
    scores per strategy and tag (``breakdown``, read when a page first shows them) and its
    rows' scores (``scores``, read when a page is first sorted by them).

    Args:
        index: The run's index.
    """

    __slots__ = (
        "_kept",
        "_keys",
        "_totals",
        "breakdown",
        "index",
        "scores",
        "searches",
        "texts",
        "unlike",
    )

    def __init__(self, index: RunIndex) -> None:
        self.index = index
        self._kept: dict[str, Sequence[int]] = {}
        self._totals: Mapping[str, int] | None = None
        self.texts: dict[int, str] = {}
        self.searches: OrderedDict[tuple[str, tuple[str, ...]], list[int]] = OrderedDict()
        self.unlike: frozenset[int] | None = None
        self._keys: dict[tuple[str, int, str | None], int] | None = None
        self.breakdown: Breakdown | None = None
        self.scores: tuple[float | None, ...] | None = None

    @property
    def id(self) -> str:
        """The run's id."""
        return self.index.id

    @property
    def name(self) -> str:
        """The run's name."""
        return self.index.name

    @property
    def report(self) -> EvaluationReport:
        """The run's header, counts, score and interval (a report without rows)."""
        return self.index.head

    @property
    def repeated(self) -> bool:
        """Whether the run repeated samples."""
        return self.index.repeated

    def counts(self, only: Collection[int] | None = None) -> Mapping[str, int]:
        """Rows per filter key (among the positions ``only``, when given)."""
        if only is not None:
            return self.index.counts(only)
        if self._totals is None:
            self._totals = self.index.counts()
        return self._totals

    def kept(self, filter: str, only: Collection[int] | None = None) -> Sequence[int]:
        """The positions ``filter`` keeps, in order (among ``only``, when given; the run's
        own are kept for the next page)."""
        held = self._kept.get(filter) if only is None else None
        if held is not None:
            return held
        index = self.index
        outcomes = index.outcomes
        candidates: Sequence[int] = range(len(index.ids)) if only is None else sorted(only)
        kept: Sequence[int]
        if filter == "all":
            kept = candidates
        elif filter == "not-passed":
            kept = [p for p in candidates if outcomes[p] not in _APART_FROM_NOT_PASSED]
        elif filter == "flaky":
            kept = [p for p in candidates if p in index.flaky]
        else:
            kept = [p for p in candidates if outcomes[p] == filter]
        if only is None:
            self._kept[filter] = kept
        return kept

    def position(self, key: tuple[str, int, str | None]) -> int | None:
        """The position of the row ``(sample, repeat, strategy)``, if the run has it."""
        if self._keys is None:
            self._keys = {found: i for i, found in enumerate(self.index.keys())}
        return self._keys.get(key)


def _search_texts(lines: Mapping[int, str]) -> dict[int, str]:
    texts = {}
    for row_id, line in lines.items():
        data = orjson.loads(line)
        text = _line_text(data)
        texts[row_id] = _search_text(row_from_dict(data)) if text is None else text
    return texts


def _plain(value: object) -> bool:
    return value is None or type(value) is str


def _line_text(data: Mapping[str, Any]) -> str | None:
    """The search text of a stored line whose values are all text or null (as
    :func:`_search_text` makes it from the row), without rebuilding the row; ``None`` for
    another line (a list, dict, number or transcript shows otherwise than its JSON)."""
    output, expected = data.get("output"), data.get("expected_output")
    if not (_plain(output) and _plain(expected)):
        return None
    items = data.get("parameters") or []
    named = any(isinstance(item, Mapping) for item in items)
    pairs = [(i.get("name"), i.get("value")) if named else (None, i) for i in items]
    if not all(_plain(value) and _plain(name) for name, value in pairs):
        return None
    values = ["null" if value is None else value for _, value in pairs]
    if any(name is not None for name, _ in pairs):
        shown = ", ".join(
            v if n is None else f"{n}={v}" for (n, _), v in zip(pairs, values, strict=True)
        )
    else:
        shown = "[" + ", ".join(values) + "]"
    error = data.get("error")
    parts = [
        data["name"],
        data.get("strategy") or "function",
        *(data.get("tags") or ()),
        data.get("explanation") or "",
        ""
        if error is None
        else (f"{error['type']}: {error['message']}" if error.get("message") else error["type"]),
        shown,
        "null" if expected is None else expected,
        "null" if output is None else output,
    ]
    return "\n".join(part[:_SEARCH_LENGTH] for part in parts if part).lower()


def _search_text(row: EvaluationRow) -> str:
    parts = [
        row.name,
        row.strategy or "function",
        *row.tags,
        row.explanation or "",
        str(row.error) if row.error is not None else "",
        parameters_text(row.sample),
        display_value(row.expected_output),
        display_value(row.output),
    ]
    return "\n".join(part[:_SEARCH_LENGTH] for part in parts if part).lower()


@dataclass(frozen=True, slots=True)
class RowPage:
    """One page of the rows a filter and a search keep.

    Attributes:
        rows: The page's rows with their position in the run (see
            :attr:`~aeval._store._pages.RunIndex.ids`) and whether each is flaky.
        matching: Rows the filter and the search keep.
        page: The page shown (0-based, within range).
        pages: Pages of matching rows (at least 1).
        first: The position of the page's first row among the matching ones (0-based).
    """

    rows: tuple[tuple[int, EvaluationRow, bool], ...]
    matching: int
    page: int
    pages: int
    first: int


async def select(
    pages: RunPages,
    run: LoadedRun,
    *,
    filter: str,
    query: str,
    page: int,
    size: int,
    only: Collection[int] | None = None,
    scores: Sequence[float | None] | None = None,
    descending: bool = False,
) -> RowPage:
    """The page ``page`` (0-based, clamped) of the rows of ``run`` that ``filter`` keeps and
    that hold every word of ``query`` (case-insensitive), among the positions ``only`` (the
    review queue's rows) when given, ordered by ``scores`` (each position's; lowest first, or
    highest with ``descending``; rows without a score last) when given; only the page's rows
    (and a search's candidates) are read from the store."""
    terms = query.lower().split()
    index = run.index
    kept: Sequence[int] = run.kept(filter, only)
    if terms:
        key = (filter, tuple(terms))
        found = run.searches.get(key) if only is None else None
        if found is None:
            found = await _search(pages, run, list(kept), terms)
            if only is None:
                run.searches[key] = found
                while len(run.searches) > _SEARCHES_KEPT:
                    run.searches.popitem(last=False)
        else:
            run.searches.move_to_end(key)
        kept = found
    if scores is not None:
        sign = -1.0 if descending else 1.0
        kept = sorted(kept, key=lambda p: (scores[p] is None, sign * (scores[p] or 0.0)))
    pages_count = max(1, math.ceil(len(kept) / size))
    page = min(max(page, 0), pages_count - 1)
    first = page * size
    shown = kept[first : first + size]
    rows = await pages.rows(index, [index.ids[p] for p in shown])
    return RowPage(
        rows=tuple((p, rows[index.ids[p]], p in index.flaky) for p in shown),
        matching=len(kept),
        page=page,
        pages=pages_count,
        first=first,
    )


async def _search(pages: RunPages, run: LoadedRun, kept: list[int], terms: list[str]) -> list[int]:
    """The positions among ``kept`` whose row's search text holds every word of ``terms``:
    SQLite narrows them to the rows that may match, and only those are decoded (once);
    once every row's text is held, the texts alone answer."""
    index = run.index
    texts = run.texts
    if len(texts) == len(index.ids):
        return [p for p in kept if all(term in texts[index.ids[p]] for term in terms)]
    possible = await pages.candidates(index, terms)
    if possible is not None:
        if run.unlike is None:
            run.unlike = await pages.unlike(index)
        possible |= run.unlike
        kept = [p for p in kept if index.ids[p] in possible]
    missing = [index.ids[p] for p in kept if index.ids[p] not in run.texts]
    for start in range(0, len(missing), _SEARCH_BATCH):
        lines = await pages.lines(index, missing[start : start + _SEARCH_BATCH])
        run.texts.update(await anyio.to_thread.run_sync(_search_texts, lines))
    return [p for p in kept if all(term in texts[index.ids[p]] for term in terms)]


class RunCache:
    """The last few runs indexed, so that paging through a large run reads its index once
    (and the last whole reports a comparison or a grid loaded: up to ten, up to 200,000 rows
    in all).

    A run with no end recorded (still going on, or killed) is indexed again when it has
    new rows (its last row id changed) or has ended since.

    Args:
        store: The run store.
        size: How many runs are kept.
    """

    def __init__(self, store: RunStore, *, size: int = 3) -> None:
        self.pages = RunPages(store)
        self._store = store
        self._size = size
        self._runs: OrderedDict[str, LoadedRun] = OrderedDict()
        self._reports: OrderedDict[str, EvaluationReport] = OrderedDict()
        self._lock = anyio.Lock()

    async def get(self, run_id: str) -> LoadedRun:
        """The run ``run_id`` (an exact id or a ref), indexed.

        Raises:
            RunNotFoundError: No run matches.
        """
        async with self._lock:
            held = self._runs.get(run_id)
            if held is None:
                run_id = await self._store.resolve(run_id, shards=True)
                held = self._runs.get(run_id)
            if held is not None:
                index = held.index
                if index.finished or await self.pages.stamp(run_id) == index.stamp:
                    self._runs.move_to_end(run_id)
                    return held
            loaded = LoadedRun(await self.pages.index(run_id))
            self._runs[run_id] = loaded
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)
            return loaded

    async def report(self, run: LoadedRun) -> EvaluationReport:
        """The whole report of ``run`` (a comparison and a grid need every row), kept for the
        last runs that have ended (see the class)."""
        async with self._lock:
            held = self._reports.get(run.id)
            if held is not None:
                self._reports.move_to_end(run.id)
                return held
            report = await self._store.load(run.id, shards=True)
            if run.index.finished:
                self._reports[run.id] = report
                while len(self._reports) > 1 and (
                    len(self._reports) > _REPORTS_KEPT
                    or sum(r.evaluation_count for r in self._reports.values()) > _REPORT_ROWS
                ):
                    self._reports.popitem(last=False)
            return report
