"""The pages ``aeval view`` serves: the list of runs and one run's rows, built from the HTML
report's pieces (its page builder, its rows, its filters), every value escaped; the history
and the comparison are the formatters' own pages with a way back."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from .._util._numbers import format_interval, format_percent
from ..formatters._header import header_facts, partial_banner, score_text
from ..formatters._history import commit_text, utc
from ..formatters._history_terminal import run_note
from ..formatters._html_rows import ROW_FILTERS, row_html
from ..formatters._page import (
    BASE_STYLE,
    DETAILS_STYLE,
    FILTERS_STYLE,
    HEADINGS_STYLE,
    TABLE_STYLE,
    TABLE_TAIL_STYLE,
    html_page,
    main_style,
)
from ._script import SCRIPT

if TYPE_CHECKING:
    from .._store import RunSummary
    from .._store._pages import Breakdown
    from .._store._rows import Group
    from ._data import LoadedRun, RowPage
    from ._review import LabelSummary, RowLabels

__all__ = [
    "RunView",
    "error_page",
    "framed_page",
    "grid_page",
    "linked_runs",
    "page_policy",
    "run_href",
    "run_page",
    "runs_page",
]

STYLE = (
    BASE_STYLE
    + main_style("90rem")
    + HEADINGS_STYLE
    + TABLE_STYLE
    + """th, td { border: 1px solid #d0d7de; padding: 0.35rem 0.6rem; text-align: left;
  vertical-align: top; overflow-wrap: break-word; }
thead th { white-space: nowrap; }
#rows { width: 100%; }
#rows td.text { min-width: 12rem; }
#rows tr.more > td { border-top: none; padding-top: 0; }
#rows tr.more dl { display: grid; grid-template-columns: max-content minmax(0, 1fr);
  gap: 0.15rem 1rem; }
#rows tr.more pre { max-height: 30rem; overflow: auto; }
"""
    + TABLE_TAIL_STYLE
    + FILTERS_STYLE
    + DETAILS_STYLE
    + """nav.top { display: flex; gap: 1rem; margin-bottom: 1rem; }
.banner { padding: 0.75rem 1rem; border: 2px solid #9a6700; background: #fff8c5; }
.note, .muted { color: #57606a; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; }
.badge { display: inline-block; padding: 0 0.5rem; border-radius: 1rem; color: #ffffff;
  font-size: 0.85rem; font-weight: 600; text-transform: uppercase; white-space: nowrap; }
.passed { background: #1a7f37; } .failed { background: #b42318; }
.unscored { background: #7a4d00; } .error { background: #6639ba; }
.skipped { background: #57606a; }
.not_applicable { background: #8c959f; }
.flag, .stale { display: inline-block; margin-left: 0.25rem; padding: 0 0.4rem;
  border: 1px solid #9a6700; border-radius: 1rem; color: #7a4d00; font-size: 0.8rem; }
.filters a[aria-current="true"] { font-weight: 700; }
pre { margin: 0.25rem 0; padding: 0.5rem; background: #f6f8fa; white-space: pre-wrap; }
tr.current { outline: 3px solid #0969da; outline-offset: -3px; }
.review button { margin: 0.1rem; }
.review ul { margin: 0.25rem 0; padding-left: 1rem; }
#review { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: 0.5rem 0; }
#breakdown { display: flex; flex-wrap: wrap; gap: 0 2rem; align-items: flex-start; }
table.groups caption { text-align: left; font-weight: 600; }
.contradicts { display: inline-block; padding: 0 0.4rem; border: 1px solid #b42318;
  border-radius: 1rem; color: #b42318; font-size: 0.8rem; white-space: nowrap; }
#grid { width: 100%; }
#grid td pre { max-height: 12rem; overflow: auto; }
#grid td[data-outcome="failed"], #grid td[data-outcome="error"] { background: #fff5f5; }
.running { border-color: #0969da; background: #ddf4ff; }
"""
)

_META_POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
_NAV = '<nav class="top" aria-label="Pages"><a href="/">All runs</a>{links}</nav>'


def page_policy(page: str) -> str:
    """The Content-Security-Policy a page declares in its ``<meta>`` element, to be sent as
    a header too (where ``frame-ancestors`` also works)."""
    found = _META_POLICY.search(page)
    if found is None:
        raise ValueError("the page declares no Content-Security-Policy")
    return found.group(1) + "; frame-ancestors 'none'"


def _nav(links: Sequence[tuple[str, str]]) -> str:
    return _NAV.format(
        links="".join(
            f'<span aria-hidden="true"> · </span><a href="{escape(href)}">{escape(text)}</a>'
            for href, text in links
        )
    )


def linked_runs(page: str, run_ids: Sequence[str]) -> str:
    """The history's page with each run's id in its table a link to the run's page."""
    for run_id in run_ids:
        cell = f"<tr><td>{escape(run_id)}</td>"
        page = page.replace(
            cell, f'<tr><td><a href="{escape(run_href(run_id))}">{escape(run_id)}</a></td>', 1
        )
    return page


def framed_page(page: str, links: Sequence[tuple[str, str]] = ()) -> str:
    """A formatter's page (the history, the comparison) with the viewer's links on top."""
    return page.replace("<main>\n", f"<main>\n{_nav(links)}\n", 1)


def _page(title: str, body: list[str]) -> str:
    return html_page(title=escape(title), style=STYLE, body=body, script=SCRIPT, same_origin=True)


def run_href(run_id: str, *, review: bool = False, **query: str | int | None) -> str:
    """The address of a run's page (its review queue with ``review``), with the query's
    values that are not the defaults."""
    kept = {k: v for k, v in query.items() if v not in ("", "all", 0, None)}
    path = f"/runs/{quote(run_id, safe='')}" + ("/review" if review else "")
    return path + (f"?{urlencode(kept)}" if kept else "")


def _state(run: RunSummary) -> str:
    if run.finished_at is None:
        return "running (no end recorded)"
    return "partial" if run.partial else "complete"


def runs_page(
    runs: Sequence[RunSummary], *, store: str, labels: Mapping[str, int] | None = None
) -> str:
    """The list of stored runs, newest first, each linked to its rows, its name's history and
    the comparison with the run of that name before it, with the labels made in each."""
    labels = labels or {}
    body = [_nav(()), "<h1>Runs</h1>", f'<p class="note">In {escape(store)}.</p>']
    if not runs:
        body.append('<p class="note">No run stored yet: <code>aeval run CONFIG</code>.</p>')
        return _page("aeval view", body)
    previous: dict[str, str] = {}
    before: dict[str, str] = {}
    for run in runs:
        if run.name in previous:
            before[run.id] = previous[run.name]
        previous[run.name] = run.id
    body += [
        '<form id="grid-form" method="get" action="/grid">',
        '<p><button type="submit">Grid of the checked runs</button> '
        '<span class="note">(2 to 10, in the list\'s order: the first checked is the one the '
        "others are paired with)</span></p>",
        '<table id="runs">',
        '<thead><tr><th scope="col">Grid</th><th>Run</th><th>Name</th><th>Started (UTC)</th>'
        '<th class="num">Score</th><th class="num">95% CI</th><th>State</th><th>Commit</th>'
        '<th>Note</th><th class="num">Labels</th><th>Links</th></tr></thead>',
        "<tbody>",
    ]
    for run in reversed(runs):
        links = [f'<a href="/history/{quote(run.name, safe="")}">history</a>']
        if run.id in before:
            query = urlencode({"old": before[run.id], "new": run.id})
            links.append(f'<a href="{escape("/compare?" + query)}">compare with previous</a>')
        body.append(
            f'<tr data-run="{escape(run.id)}"><td><input type="checkbox" name="run" '
            f'value="{escape(run.id)}" aria-label="Grid: {escape(run.id)}"></td>'
            f'<td><a href="{escape(run_href(run.id))}">'
            f"{escape(run.id)}</a></td><td>{escape(run.name)}</td>"
            f"<td>{escape(utc(run.started_at))}</td>"
            f'<td class="num">{format_percent(run.score)}</td>'
            f'<td class="num">{escape(format_interval(run.interval))}</td>'
            f"<td>{_state(run)}</td>"
            f"<td>{escape(commit_text(run.git_commit, run.git_dirty))}</td>"
            f"<td>{escape(run_note(run))}</td>"
            f'<td class="num">{labels.get(run.id, "")}</td><td>{" · ".join(links)}</td></tr>'
        )
    body += ["</tbody>", "</table>", "</form>"]
    return _page("aeval view", body)


@dataclass(frozen=True, slots=True)
class RunView:
    """What one run's page shows.

    Attributes:
        run: The run, loaded.
        page: The page of rows the filter and the search keep.
        filter: The filter key.
        query: The search.
        token: The process's token the page's script sends with each label.
        labels: The labels of the rows shown, by their position in the run.
        previous: The run of the same name before this one, if any.
        queue: The review queue's description when the page shows it, else ``None``.
        only: The positions of the queue's rows, when the page shows it.
        keep: What the page's links keep in their query (the queue's pick, sample, seed).
        summary: How far the run is labelled and how the labels agree with its verdicts.
        breakdown: The run's scores per strategy and tag and its judges' counts.
    """

    run: LoadedRun
    page: RowPage
    filter: str
    query: str
    token: str
    labels: Mapping[int, RowLabels]
    previous: str | None = None
    queue: str | None = None
    only: frozenset[int] | None = None
    keep: Mapping[str, str] = field(default_factory=dict)
    summary: LabelSummary | None = None
    breakdown: Breakdown | None = None

    def href(self, **query: str | int | None) -> str:
        """The address of this page with ``query`` (and what it keeps)."""
        return run_href(self.run.id, review=self.queue is not None, **{**self.keep, **query})


def _filters(view: RunView) -> list[str]:
    counts = view.run.counts(view.only)
    links = "".join(
        f'<a href="{escape(view.href(filter=key, q=view.query))}" '
        f'data-filter="{key}" aria-current="{str(key == view.filter).lower()}">'
        f"{label} ({counts[key]})</a> "
        for key, label in ROW_FILTERS
        if key != "not_applicable" or counts[key]
    )
    page = view.page
    last = page.first + len(page.rows)
    total = counts["all"]
    shown = f"Showing {page.matching} of {total} rows" + (
        f" ({page.first + 1}–{last} on this page)" if page.pages > 1 else ""
    )
    strategies = list(dict.fromkeys(s for s in view.run.index.strategies if s is not None))
    chosen = view.keep.get("strategy", "")
    sort = view.keep.get("sort", "")
    by_strategy = "".join(
        f'<a href="{escape(view.href(filter=view.filter, q=view.query, strategy=key))}" '
        f'data-strategy-filter="{escape(key)}" aria-current="{str(key == chosen).lower()}">'
        f"{escape(key or 'every strategy')}</a> "
        for key in ["", *strategies]
    )
    orders = "".join(
        f'<a href="{escape(view.href(filter=view.filter, q=view.query, sort=key))}" '
        f'data-sort="{key}" aria-current="{str(key == sort).lower()}">{text}</a> '
        for key, text in (("", "failures first"), ("score", "score ↑"), ("-score", "score ↓"))
    )
    return [
        '<div class="filters">',
        f'<nav role="group" aria-label="Show rows">{links}</nav>',
        *(
            [f'<nav role="group" aria-label="Strategy">Strategy: {by_strategy}</nav>']
            if len(strategies) > 1 or chosen
            else []
        ),
        f'<nav role="group" aria-label="Order">Order: {orders}</nav>',
        f'<form id="search-form" method="get" action="{escape(view.href())}" role="search">',
        f'<input type="hidden" name="filter" value="{escape(view.filter)}">',
        *(
            f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
            for k, v in view.keep.items()
        ),
        '<label for="search">Search</label> <input type="search" id="search" name="q" '
        f'value="{escape(view.query)}" autocomplete="off" '
        'placeholder="sample, strategy, output, error…"> <button type="submit">Search</button>',
        "</form>",
        f'<p id="shown" aria-live="polite">{shown}</p>',
        "</div>",
    ]


def _pager(view: RunView) -> list[str]:
    page = view.page
    if page.pages < 2:
        return []

    def link(number: int, text: str, rel: str) -> str:
        href = view.href(filter=view.filter, q=view.query, page=number + 1)
        return f'<a id="{rel}" rel="{rel}" href="{escape(href)}">{text}</a>'

    parts = [link(page.page - 1, "Previous", "prev")] if page.page > 0 else []
    parts.append(f'<span id="page">Page {page.page + 1} of {page.pages}</span>')
    if page.page + 1 < page.pages:
        parts.append(link(page.page + 1, "Next", "next"))
    return ['<nav id="pages" class="filters" aria-label="Pages of rows">', *parts, "</nav>"]


def _group_table(caption: str, key: str, groups: Mapping[str, Group]) -> str:
    rows = "".join(
        f'<tr><th scope="row">{escape(name)}</th><td class="num">{g.rows}</td>'
        f'<td class="num">{format_percent(g.score)}</td>'
        f'<td class="num">{escape(format_interval(g.interval))}</td></tr>'
        for name, g in groups.items()
    )
    return (
        f'<table class="groups" id="by-{key}"><caption>{caption}</caption><thead><tr>'
        f'<th scope="col">{key.capitalize()}</th><th class="num" scope="col">Rows</th>'
        '<th class="num" scope="col">Score</th><th class="num" scope="col">95% CI</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _share(part: int, whole: int) -> str:
    return format_percent(100.0 * part / whole) if whole else "–"


def _breakdown(breakdown: Breakdown | None) -> list[str]:
    if breakdown is None:
        return []
    tables = []
    if breakdown.strategies:
        tables.append(_group_table("Score per strategy", "strategy", breakdown.strategies))
    if breakdown.tags:
        tables.append(_group_table("Score per tag", "tag", breakdown.tags))
    if breakdown.judges:
        rows = "".join(
            f'<tr><th scope="row">{escape(name)}</th><td class="num">{j.verdicts}</td>'
            f'<td class="num">{_share(j.unreadable, j.verdicts)}</td>'
            f'<td class="num">{_share(j.reasked, j.verdicts)}</td></tr>'
            for name, j in breakdown.judges.items()
        )
        tables.append(
            '<table class="groups" id="by-judge"><caption>Judges</caption><thead><tr>'
            '<th scope="col">Strategy</th><th class="num" scope="col">Verdicts asked</th>'
            '<th class="num" scope="col">Parse failures</th>'
            '<th class="num" scope="col">Re-asks</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    return [f'<div id="breakdown">{"".join(tables)}</div>'] if tables else []


def _review_cell(labels: RowLabels | None, *, contradicted: bool = False) -> str:
    items = []
    for label in () if labels is None else labels.labels:
        stale = ' <span class="stale">stale</span>' if label.stale else ""
        note = f": {escape(label.note)}" if label.note else ""
        items.append(
            f'<li data-reviewer="{escape(label.reviewer)}" data-verdict="{label.verdict}" '
            f'data-stale="{str(label.stale).lower()}">{escape(label.reviewer)}: '
            f"<strong>{label.verdict}</strong>{note}{stale}</li>"
        )
    mark = (
        '<span class="contradicts" title="a label contradicts the verdict">label ≠ verdict</span>'
        if contradicted
        else ""
    )
    return (
        f'<td class="review">{mark}<ul class="labels">{"".join(items)}</ul>'
        '<button type="button" data-verdict="pass">Pass</button>'
        '<button type="button" data-verdict="fail">Fail</button>'
        '<input type="text" class="note" aria-label="Note" placeholder="note (n)"></td>'
    )


def run_page(view: RunView) -> str:
    """One run's page: its score and header, the filters and search, a page of rows with
    their details and labels, the pager, and the review bar (reviewer, keys)."""
    run = view.run
    report = run.report
    links = [(f"/history/{quote(run.name, safe='')}", "History of this name")]
    if view.previous is not None:
        query = urlencode({"old": view.previous, "new": run.id})
        links.append((f"/compare?{query}", "Compare with the previous run"))
    links.append(
        (run_href(run.id), "All rows") if view.queue else (run_href(run.id, review=True), "Review")
    )
    base = f"/runs/{quote(run.id, safe='')}/labels"
    links += [(f"{base}.jsonl", "Labels as JSONL"), (f"{base}.csv", "Labels as CSV")]
    banner = partial_banner(report)
    running = not run.index.finished
    if running:
        expected = report.run.samples_expected
        of = f" of {expected}" if expected is not None else ""
        banner = (
            f"RUNNING: {report.sample_count}{of} samples so far; this page follows the run "
            "until it records its end."
        )
    facts = "".join(
        f"<dt>{escape(label)}</dt><dd>{escape(value)}</dd>" for label, value in header_facts(report)
    )
    body = [
        _nav(links),
        '<div id="run-head">',
        *(
            [
                f'<div class="banner{" running" if running else ""}" id="banner" '
                f'role="status">{escape(banner)}</div>'
            ]
            if banner
            else []
        ),
        f"<h1>{escape(run.name)} <small>{escape(run.id)}</small></h1>",
        f'<p class="score">Score <strong>{escape(score_text(report))}</strong></p>',
        f'<dl class="facts">{facts}</dl>',
        *_breakdown(view.breakdown),
        "</div>",
    ]
    if view.queue is not None:
        body.append(f'<p class="note" id="queue">Review queue: {escape(view.queue)}.</p>')
    body += [
        f'<div id="review" data-token="{escape(view.token)}" data-run="{escape(run.id)}" '
        f'data-running="{str(running).lower()}">'
        '<label for="reviewer">Reviewer</label> <input type="text" id="reviewer" '
        'autocomplete="off" placeholder="your name">'
        '<span class="note">Keys: j/k move, p/f label pass/fail and move on, n note (Enter '
        "keeps it)</span>"
        + (
            ""
            if view.summary is None
            else f'<span id="labelled">{escape(view.summary.counter)}</span>'
            f'<span id="agreement" class="note">{escape(view.summary.agreement)}</span>'
        )
        + '<span id="status" role="status" aria-live="polite"></span></div>',
        '<div id="rows-part">',
        *_filters(view),
    ]
    if not view.page.rows:
        body.append('<p class="note">No row matches.</p>')
    else:
        headers = ["Sample", "Strategy", "Outcome", "Score", "Explanation", "Error", "Review"]
        head = "".join(f'<th scope="col">{h}</th>' for h in headers)
        body += ['<table id="rows">', f"<thead><tr>{head}</tr></thead>", "<tbody>"]
        for position, row, flaky in view.page.rows:
            cells, details = row_html(row, flaky=flaky, repeated=run.repeated)[4:].split(
                '<td class="details">', 1
            )
            contradicted = view.summary is not None and position in view.summary.contradicted
            cell = _review_cell(view.labels.get(position), contradicted=contradicted)
            strategy = "" if row.strategy is None else f' data-strategy="{escape(row.strategy)}"'
            body.append(
                f'<tr data-row="{position}" data-sample="{escape(row.name)}" '
                f'data-repeat="{row.repeat}"{strategy} '
                + cells
                + cell
                + "</tr>"
                + f'<tr class="more" data-more="{position}">'
                f'<td colspan="{len(headers)}" class="details">' + details
            )
        body += ["</tbody>", "</table>"]
    body += [*_pager(view), "</div>"]
    return _page(f"{run.name} · aeval view", body)


def grid_page(body: list[str]) -> str:
    """The grid of runs' page around its ``body``."""
    return _page("Grid · aeval view", [_nav(()), *body])


def error_page(status: int, message: str) -> str:
    """A page saying what went wrong, with the way back."""
    return _page(
        f"{status} · aeval view", [_nav(()), f"<h1>{status}</h1>", f"<p>{escape(message)}</p>"]
    )
