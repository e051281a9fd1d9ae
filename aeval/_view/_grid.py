"""The grid of ``aeval view``: 2 to 10 stored runs side by side, their rows aligned by
``(sample, repeat, strategy)``, each run's verdict, score and output in its column, filtered
to the rows where any run failed or where the verdicts differ, with the paired statistics of
each run against the first (``aeval compare``'s)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from .._display import display_value
from .._util._numbers import format_interval, format_number, format_percent
from ..formatters._header import truncated
from ._pages import run_href

if TYPE_CHECKING:
    from .._compare import Comparison
    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow

__all__ = ["GRID_FILTERS", "GRID_RUNS", "Grid", "GridRow", "grid_of", "grid_page_body"]

GRID_RUNS = (2, 10)
"""The fewest and the most runs a grid shows."""

GRID_FILTERS = (
    ("all", "All"),
    ("any-failed", "Any run failed"),
    ("differ", "Verdicts differ"),
)
"""The grid's filters, ``(key, label)``."""

_OUTPUT_LENGTH = 400
_FAILED = ("failed", "error")

Key = tuple[str, int, str | None]


@dataclass(frozen=True, slots=True)
class GridRow:
    """One aligned row: its key and each run's row (``None`` where a run has none).

    Attributes:
        key: ``(sample, repeat, strategy)``.
        cells: Each run's row, in the grid's order of runs.
    """

    key: Key
    cells: tuple[EvaluationRow | None, ...]

    @property
    def any_failed(self) -> bool:
        """Whether a run's row failed or raised."""
        return any(c is not None and c.outcome.value in _FAILED for c in self.cells)

    @property
    def differ(self) -> bool:
        """Whether the runs' verdicts differ (a run without the row counts as differing)."""
        return len({None if c is None else c.outcome.value for c in self.cells}) > 1

    def kept_by(self, filter: str) -> bool:
        """Whether the filter ``filter`` keeps the row."""
        if filter == "any-failed":
            return self.any_failed
        if filter == "differ":
            return self.differ
        return True


@dataclass(frozen=True, slots=True)
class Grid:
    """Runs side by side.

    Attributes:
        runs: Each run's ``(id, name, report)``, the first the one the others are paired with.
        rows: The aligned rows, in the first run's order, then the rows of the others only.
        comparisons: Each later run against the first: its comparison, or why there is none.
    """

    runs: tuple[tuple[str, str, EvaluationReport], ...]
    rows: tuple[GridRow, ...]
    comparisons: tuple[Comparison | str, ...]

    def counts(self) -> dict[str, int]:
        """Rows per filter key."""
        return {key: sum(row.kept_by(key) for row in self.rows) for key, _ in GRID_FILTERS}


def _key(row: EvaluationRow) -> Key:
    return row.name, row.repeat, row.strategy


def grid_of(
    runs: Sequence[tuple[str, str, EvaluationReport]], comparisons: Sequence[Comparison | str]
) -> Grid:
    """The grid of ``runs`` (each ``(id, name, report)``) with the ``comparisons`` of each
    later run against the first."""
    found: dict[Key, list[EvaluationRow | None]] = {}
    for at, (_, _, report) in enumerate(runs):
        for row in report.evaluations:
            cells = found.setdefault(_key(row), [None] * len(runs))
            if cells[at] is None:
                cells[at] = row
    return Grid(
        runs=tuple(runs),
        rows=tuple(GridRow(key, tuple(cells)) for key, cells in found.items()),
        comparisons=tuple(comparisons),
    )


def _cell(row: EvaluationRow | None) -> str:
    if row is None:
        return '<td class="missing"><span class="muted">no row</span></td>'
    outcome = row.outcome.value
    score = "" if row.score is None else f" {format_percent(row.score * 100)}"
    output = escape(truncated(display_value(row.output), _OUTPUT_LENGTH))
    return (
        f'<td data-outcome="{outcome}"><span class="badge {outcome}">{outcome}</span>'
        f'<span class="num">{score}</span><pre>{output}</pre></td>'
    )


def _paired(grid: Grid) -> list[str]:
    first_id = grid.runs[0][0]
    rows = []
    for (run_id, _, _), comparison in zip(grid.runs[1:], grid.comparisons, strict=True):
        if isinstance(comparison, str):
            rows.append(
                f'<tr data-run="{escape(run_id)}"><th scope="row">{escape(run_id)}</th>'
                f'<td colspan="6">{escape(comparison)}</td></tr>'
            )
            continue
        rows.append(
            f'<tr data-run="{escape(run_id)}"><th scope="row">{escape(run_id)}</th>'
            f'<td class="num">{comparison.difference:+.2f}</td>'
            f'<td class="num">{escape(format_interval(comparison.interval))}</td>'
            f'<td class="num">{format_number(comparison.p_value)}</td>'
            f"<td>{escape(comparison.test)}</td>"
            f'<td class="num">{len(comparison.regressions)}</td>'
            f'<td class="num">{len(comparison.fixes)}</td></tr>'
        )
    return [
        f"<h2>Each run against {escape(first_id)}</h2>",
        '<table id="paired"><thead><tr><th scope="col">Run</th>'
        '<th class="num" scope="col">Difference (points)</th>'
        '<th class="num" scope="col">95% CI</th><th class="num" scope="col">p</th>'
        '<th scope="col">Test</th><th class="num" scope="col">Regressions</th>'
        '<th class="num" scope="col">Fixes</th></tr></thead>',
        f"<tbody>{''.join(rows)}</tbody></table>",
    ]


def grid_page_body(
    grid: Grid, *, filter: str, page: int, size: int, address: Callable[[str, int], str]
) -> list[str]:
    """The grid page's body (after its links on top): the runs, the paired statistics, the
    filters and the page ``page`` (0-based, clamped) of ``size`` aligned rows;
    ``address(filter, page)`` is the address of another view of the grid."""
    counts = grid.counts()
    kept = [row for row in grid.rows if row.kept_by(filter)]
    pages = max(1, math.ceil(len(kept) / size))
    page = min(max(page, 0), pages - 1)
    shown = kept[page * size : (page + 1) * size]
    runs = "".join(
        f'<tr><th scope="row"><a href="{escape(run_href(run_id))}">{escape(run_id)}</a>'
        f"</th><td>{escape(name)}</td>"
        f'<td class="num">{format_percent(report.score)}</td>'
        f'<td class="num">{escape(format_interval(report.confidence_interval()))}</td></tr>'
        for run_id, name, report in grid.runs
    )
    body = [
        f"<h1>Grid of {len(grid.runs)} runs</h1>",
        '<table id="grid-runs"><thead><tr><th scope="col">Run</th><th scope="col">Name</th>'
        '<th class="num" scope="col">Score</th><th class="num" scope="col">95% CI</th>'
        f"</tr></thead><tbody>{runs}</tbody></table>",
        *_paired(grid),
        '<div class="filters"><nav role="group" aria-label="Show rows">'
        + "".join(
            f'<a href="{escape(address(key, 0))}" data-filter="{key}" '
            f'aria-current="{str(key == filter).lower()}">{label} ({counts[key]})</a> '
            for key, label in GRID_FILTERS
        )
        + f'</nav><p id="shown">Showing {len(kept)} of {len(grid.rows)} rows'
        + (f", page {page + 1} of {pages}" if pages > 1 else "")
        + "</p></div>",
    ]
    if not shown:
        return [*body, '<p class="note">No row matches.</p>']
    head = "".join(f'<th scope="col">{escape(run_id)}</th>' for run_id, _, _ in grid.runs)
    body += [
        '<table id="grid">',
        f'<thead><tr><th scope="col">Sample</th><th scope="col">Strategy</th>{head}</tr></thead>',
        "<tbody>",
    ]
    for row in shown:
        sample, repeat, strategy = row.key
        name = f"{sample} [repeat {repeat + 1}]" if repeat else sample
        body.append(
            f'<tr data-sample="{escape(sample)}" data-differ="{str(row.differ).lower()}">'
            f'<th scope="row">{escape(name)}</th>'
            f"<td>{escape(strategy or 'function')}</td>"
            + "".join(_cell(cell) for cell in row.cells)
            + "</tr>"
        )
    body += ["</tbody>", "</table>"]
    links = []
    if page > 0:
        links.append(f'<a rel="prev" href="{escape(address(filter, page - 1))}">Previous</a>')
    if page + 1 < pages:
        links.append(f'<a rel="next" href="{escape(address(filter, page + 1))}">Next</a>')
    if links:
        body.append(f'<nav class="filters" aria-label="Pages of rows">{" ".join(links)}</nav>')
    return body
