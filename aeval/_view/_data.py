"""The rows of a stored run as ``aeval view`` serves them: loaded once, filtered, searched and
cut into pages on the server, so a page of a 100,000-row run is a page, not the run."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from .._display import display_value
from ..formatters._header import failures_first, parameters_text
from ..formatters._html_rows import ROW_FILTERS

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow
    from .._store import RunStore

__all__ = [
    "FILTER_KEYS",
    "PAGE_ROWS",
    "LoadedRun",
    "RowPage",
    "RunCache",
    "positions",
    "select",
]

PAGE_ROWS = 50
"""Rows on one page of a run."""

FILTER_KEYS = frozenset(key for key, _ in ROW_FILTERS)

_SEARCH_LENGTH = 4000


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """A stored run held in memory: its report, its rows failures first, which are flaky,
    and each row's lowercased search text.

    Attributes:
        id: The run's id.
        name: The run's name.
        report: The report the store rebuilt.
        rows: The rows, failures first (the order of the HTML report).
        flaky: Whether each row's (sample, strategy) pair is flaky.
        texts: Each row's search text, lowercased.
        repeated: Whether the run repeated samples.
        where: Each row's position, by ``(sample, repeat, strategy)``.
        totals: Rows per filter key.
    """

    id: str
    name: str
    report: EvaluationReport
    rows: tuple[EvaluationRow, ...]
    flaky: tuple[bool, ...]
    texts: tuple[str, ...]
    repeated: bool
    where: Mapping[tuple[str, int, str | None], int]
    totals: Mapping[str, int]

    @classmethod
    def of(cls, run_id: str, name: str, report: EvaluationReport) -> LoadedRun:
        """Index ``report`` for filtering and search."""
        pairs = {(case.sample, case.strategy) for case in report.flaky}
        rows = tuple(failures_first(report.evaluations))
        flaky = tuple((row.name, row.strategy) in pairs for row in rows)
        return cls(
            id=run_id,
            name=name,
            report=report,
            rows=rows,
            flaky=flaky,
            texts=tuple(_search_text(row) for row in rows),
            repeated=any(row.repeat for row in rows),
            where={(row.name, row.repeat, row.strategy): i for i, row in enumerate(rows)},
            totals=_counts(rows, flaky, None),
        )

    def counts(self, only: Collection[int] | None = None) -> Mapping[str, int]:
        """Rows per filter key (among the positions ``only``, when given)."""
        return self.totals if only is None else _counts(self.rows, self.flaky, only)


def _counts(
    rows: Sequence[EvaluationRow], flaky: Sequence[bool], only: Collection[int] | None
) -> dict[str, int]:
    counts = dict.fromkeys(FILTER_KEYS, 0)
    positions = range(len(rows)) if only is None else only
    for position in positions:
        counts[rows[position].outcome.value] += 1
        counts["flaky"] += flaky[position]
    counts["all"] = len(positions)
    counts["not-passed"] = counts["all"] - counts["passed"]
    return counts


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
        rows: The page's rows with their position in :attr:`LoadedRun.rows` and whether
            each is flaky.
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


def select(
    run: LoadedRun,
    *,
    filter: str,
    query: str,
    page: int,
    size: int,
    only: Collection[int] | None = None,
) -> RowPage:
    """The page ``page`` (0-based, clamped) of the rows of ``run`` that ``filter`` keeps and
    that hold every word of ``query`` (case-insensitive), among the positions ``only`` (the
    review queue's rows) when given."""
    terms = query.lower().split()
    outcome = None if filter in ("all", "not-passed", "flaky") else filter
    candidates: Iterable[int] = range(len(run.rows)) if only is None else sorted(only)
    kept: list[int] = []
    if filter == "all" and not terms:
        kept = list(candidates)
        candidates = ()
    for position in candidates:
        row, text = run.rows[position], run.texts[position]
        if outcome is not None and row.outcome.value != outcome:
            continue
        if filter == "not-passed" and row.passed:
            continue
        if filter == "flaky" and not run.flaky[position]:
            continue
        if all(term in text for term in terms):
            kept.append(position)
    pages = max(1, math.ceil(len(kept) / size))
    page = min(max(page, 0), pages - 1)
    first = page * size
    shown = tuple((i, run.rows[i], run.flaky[i]) for i in kept[first : first + size])
    return RowPage(rows=shown, matching=len(kept), page=page, pages=pages, first=first)


class RunCache:
    """The last few runs loaded, so that paging through a large run reads the store once.

    A run with no end recorded (still going on, or killed) is read again each time, so its
    new rows show.
    """

    def __init__(self, store: RunStore, *, size: int = 3) -> None:
        self._store = store
        self._size = size
        self._runs: OrderedDict[str, LoadedRun] = OrderedDict()
        self._lock = anyio.Lock()

    async def get(self, run_id: str) -> LoadedRun:
        """The run ``run_id`` (an exact id or a ref), loaded and indexed.

        Raises:
            RunNotFoundError: No run matches.
        """
        async with self._lock:
            held = self._runs.get(run_id)
            if held is not None:
                self._runs.move_to_end(run_id)
                return held
            resolved = await self._store.resolve(run_id, shards=True)
            report = await self._store.load(resolved, shards=True)
            names = {run.id: run.name for run in await self._store.runs(shards=True)}
            loaded = await anyio.to_thread.run_sync(
                LoadedRun.of, resolved, names.get(resolved, resolved), report
            )
            if report.run.finished_at is not None:
                self._runs[resolved] = loaded
                while len(self._runs) > self._size:
                    self._runs.popitem(last=False)
            return loaded


def positions(run: LoadedRun, rows: Iterable[EvaluationRow]) -> frozenset[int]:
    """The positions in ``run`` of ``rows`` (rows of its report)."""
    where = {(row.name, row.repeat, row.strategy): i for i, row in enumerate(run.rows)}
    return frozenset(
        where[key] for row in rows if (key := (row.name, row.repeat, row.strategy)) in where
    )
