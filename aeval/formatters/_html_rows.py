"""The rows of the HTML report: a page of static rows, every row as JSON, and the script that
shows them a page at a time.

A report of 50,000 rows written as table rows is tens of megabytes of markup that a browser
lays out all at once. The page holds the first :data:`PAGE_SIZE` rows (failures first) as
HTML, readable without scripts, and every row as compact JSON in a
``<script type="application/json">`` element. The inline script reads the JSON, and shows
the rows that match the filter and the search a page at a time, building each row's cells
from text (never from markup). Without scripts the static rows show, with a note saying how
many more there are and where they are.

A row whose sample's run recorded a trace shows it in its details as a collapsed timeline
(one list item per event: its title, its arguments or query, its result, error or
documents, each cut saying its length); only a page with such rows carries the part of the
script that builds it, so a report without traces is the page it always was.

Inside that element the JSON writes ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u``
escapes (so no value can close the element or open a comment) and the characters HTML
forbids as ``\\u`` escapes too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from html import escape
from typing import TYPE_CHECKING, Any

import orjson

from .._display import display_value
from .._reporting._results import Outcome
from .._util._jsonsafe import dumps
from .._util._numbers import format_percent
from ._escape import html_forbidden, html_suspect, valid_html
from ._header import failures_first, parameters_text, truncated
from ._page import filter_script
from ._trace_view import event_views, timeline_html, trace_summary
from ._transcript_view import (
    CONVERSATION_SCRIPT,
    conversation_html,
    conversation_record,
    shows_turn_traces,
    transcript_of,
)

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow

__all__ = [
    "CELL_LENGTH",
    "PAGE_SIZE",
    "ROW_FILTERS",
    "SCRIPT",
    "TRACE_SCRIPT",
    "row_html",
    "rows_script",
    "rows_section",
]

_NOT_RUN = (Outcome.SKIPPED, Outcome.NOT_APPLICABLE)

CELL_LENGTH = 300
"""Longest explanation or error shown in the table of rows; the details hold more."""

PAGE_SIZE = 200
"""Rows shown at a time, and rows written as HTML for reading without scripts."""

_NUM = ' class="num"'

_FILTERS = (
    ("all", "All"),
    ("not-passed", "Not passed"),
    ("failed", "Failed"),
    ("error", "Errors"),
    ("unscored", "Unscored"),
    ("skipped", "Skipped"),
    ("not_applicable", "Not applicable"),
    ("flaky", "Flaky"),
    ("passed", "Passed"),
)

_ROWS_SCRIPT = """  const table = document.getElementById("rows");
  const data = document.getElementById("row-data");
  if (!form || !table || !data) return;
  const rows = JSON.parse(data.textContent);
  data.remove();
  const body = table.tBodies[0];
  const details = table.dataset.details === "true";
  const size = Number(table.dataset.pageSize) || 200;
  const buttons = Array.from(form.querySelectorAll("button[data-filter]"));
  const names = new Set(buttons.map((button) => button.dataset.filter));
  const search = document.getElementById("search");
  const shown = document.getElementById("shown");
  const pager = document.getElementById("pages");
  const previous = document.getElementById("previous");
  const next = document.getElementById("next");
  const where = document.getElementById("page");
  const special = {
    all: () => true,
    "not-passed": (row) => row.o !== "passed" && row.o !== "not_applicable",
    flaky: (row) => row.k === 1,
  };
  let filter = "all";
  let page = 0;
  const kept = (row) => (filter in special ? special[filter](row) : row.o === filter);
  const text = new Map();
  function searched(row) {
    let found = text.get(row);
    if (found === undefined) {
      const parts = [row.n, row.s ?? "function", ...(row.t || []), row.X ?? row.x,
        row.R ?? row.r, row.p, row.e, row.y];
      found = parts.filter(Boolean).join("\\n").toLowerCase();
      text.set(row, found);
    }
    return found;
  }
  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
    node.append(...children);
    return node;
  }
  const pre = (value) => element("pre", null, value ?? "");
  function json(value, notes) {
    return [pre(value), ...(notes || []).map((note) => element("p", { class: "note" }, note))];
  }
  function detailsOf(row) {
    const items = [
      ["Parameters", [pre(row.p)]],
      ["Expected output", [pre(row.e)]],
      ["Output", [pre(row.y)]],
    ];
    if (row.t && row.t.length) items.push(["Tags", [row.t.join(", ")]]);
    const explanation = row.X ?? row.x;
    if (explanation) items.push(["Explanation", [pre(explanation)]]);
    if (row.r !== undefined) {
      const said = row.f
        ? "The function under test failed, so the strategy could not run."
        : "The strategy raised.";
      const error = [element("p", null, said), pre(row.R ?? row.r)];
      if (row.b) {
        error.push(element("details", null, element("summary", null, "Traceback"), pre(row.b)));
      }
      items.push(["Error", error]);
    }
/*trace*/
    if (row.m !== undefined) items.push(["Sample metadata", json(row.m, row.mn)]);
    if (row.M !== undefined) items.push(["Result metadata", json(row.M, row.Mn)]);
    let durations = `function call ${row.d} s`;
    if (row.ds !== undefined) durations += ` · strategy ${row.ds} s`;
    items.push(["Duration", [durations]]);
    const list = element("dl");
    for (const [label, value] of items) {
      list.append(element("dt", null, label), element("dd", null, ...value));
    }
    return element("details", null, element("summary", null, "Details"), list);
  }
  function render(row) {
    const strategy = row.s ?? element("span", { class: "muted" }, "function");
    const outcome = element("td", null, element("span", { class: `badge ${row.o}` }, row.o));
    if (row.k) outcome.append(" ", element("span", { class: "flag" }, "flaky"));
    const error = element("td", { class: "text" }, row.r ?? "");
    if (row.f) error.append(" ", element("span", { class: "muted" }, "(the call failed)"));
    const tr = element(
      "tr",
      { "data-outcome": row.o, "data-flaky": String(row.k === 1) },
      element("th", { scope: "row" }, row.n),
      element("td", null, strategy),
      outcome,
      element("td", { class: "num" }, row.c),
      element("td", { class: "text" }, row.x ?? ""),
      error,
    );
    if (details) tr.append(element("td", { class: "details" }, detailsOf(row)));
    return tr;
  }
  function show(record) {
    const terms = search.value.toLowerCase().split(/\\s+/).filter(Boolean);
    const matching = rows.filter(
      (row) => kept(row) && terms.every((term) => searched(row).includes(term)),
    );
    const pages = Math.max(1, Math.ceil(matching.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    const first = page * size;
    const last = Math.min(first + size, matching.length);
    body.replaceChildren(...matching.slice(first, last).map(render));
    for (const button of buttons) {
      button.setAttribute("aria-pressed", String(button.dataset.filter === filter));
    }
    shown.textContent = `Showing ${matching.length} of ${rows.length} rows` +
      (pages > 1 ? ` (${first + 1}–${last} on this page)` : "");
    pager.hidden = pages < 2;
    where.textContent = `Page ${page + 1} of ${pages}`;
    previous.disabled = page === 0;
    next.disabled = page === pages - 1;
    if (!record) return;
    const params = new URLSearchParams();
    if (filter !== "all") params.set("filter", filter);
    if (terms.length) params.set("q", search.value.trim());
    if (page > 0) params.set("page", String(page + 1));
    const hash = params.toString();
    try {
      history.replaceState(null, "", hash ? `#${hash}` : location.pathname + location.search);
    } catch (refused) {
      // A browser may refuse to rewrite a file:// address; the view is right regardless.
    }
  }
  function read() {
    const params = new URLSearchParams(location.hash.slice(1));
    const wanted = params.get("filter");
    filter = wanted !== null && names.has(wanted) ? wanted : "all";
    search.value = params.get("q") || "";
    page = (parseInt(params.get("page") || "1", 10) || 1) - 1;
    show(false);
  }
  for (const button of buttons) {
    button.addEventListener("click", () => {
      filter = button.dataset.filter;
      page = 0;
      show(true);
    });
  }
  search.addEventListener("input", () => {
    page = 0;
    show(true);
  });
  previous.addEventListener("click", () => {
    page -= 1;
    show(true);
    table.scrollIntoView();
  });
  next.addEventListener("click", () => {
    page += 1;
    show(true);
    table.scrollIntoView();
  });
"""

_TRACE_SCRIPT = """    if (row.T !== undefined) {
      const list = element("ol", { class: "trace" });
      for (const [title, inputLabel, input, label, output] of row.T) {
        const item = element("li", null, element("p", null, title));
        if (input) item.append(element("p", { class: "muted" }, inputLabel), pre(input));
        if (label) item.append(element("p", { class: "muted" }, label), pre(output));
        list.append(item);
      }
      items.push(["Trace", [element("details", null, element("summary", null, row.Ts), list)]]);
    }
"""

SCRIPT = filter_script(_ROWS_SCRIPT.replace("/*trace*/\n", ""))
"""The page's script for rows without traces."""

TRACE_SCRIPT = filter_script(_ROWS_SCRIPT.replace("/*trace*/\n", _TRACE_SCRIPT))
"""The page's script when some row has a trace: it also builds each row's timeline."""


def rows_script(*, traced: bool, conversations: bool) -> str:
    """The page's script: with the timeline builder when some row shows a trace, and the
    turns builder when some row is a conversation (so other reports keep their page)."""
    if not conversations:
        return TRACE_SCRIPT if traced else SCRIPT
    parts = CONVERSATION_SCRIPT + (_TRACE_SCRIPT if traced else "")
    return filter_script(_ROWS_SCRIPT.replace("/*trace*/\n", parts))


_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028"}
_SCRIPT_UNSAFE["\u2029"] = "\\u2029"
_SCRIPT_UNSAFE_PATTERN = re.compile("[<>&\u2028\u2029]")


def _json_escaped(match: re.Match[str]) -> str:
    char = match.group()
    return json.dumps(char)[1:-1] if html_forbidden(char) else char


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe as the text of a ``<script type="application/json">``
    element of a valid HTML page (see the module docstring)."""
    data, _ = dumps(value)
    text = html_suspect().sub(_json_escaped, data.decode())
    return _SCRIPT_UNSAFE_PATTERN.sub(lambda m: _SCRIPT_UNSAFE[m.group()], text)


def rows_section(report: EvaluationReport, *, include_details: bool) -> list[str]:
    """The "Evaluations" section: filters, the first page of rows, every row as JSON."""
    parts = ['<section id="evaluations">', "<h2>Evaluations</h2>"]
    held = report.evaluations
    if not report.holds_all_rows and len(held) < report.evaluation_count:
        parts.append(
            f'<p class="note">This report holds {len(held)} of {report.evaluation_count} '
            "evaluations; the others were not kept.</p>"
        )
    if not held:
        parts += ['<p class="note">No evaluations to show.</p>', "</section>"]
        return parts
    flaky_pairs = {(case.sample, case.strategy) for case in report.flaky}
    ordered = failures_first(held)
    flaky = [(row.name, row.strategy) in flaky_pairs for row in ordered]
    parts += _filters(held, sum(flaky), static=min(len(ordered), PAGE_SIZE))
    headers = ["Sample", "Strategy", "Outcome", "Score", "Explanation", "Error"]
    if include_details:
        headers.append("Details")
    head = "".join(f'<th scope="col"{_NUM if h == "Score" else ""}>{h}</th>' for h in headers)
    repeated = any(row.repeat for row in held)
    parts += [
        f'<table id="rows" data-details="{str(include_details).lower()}" '
        f'data-page-size="{PAGE_SIZE}">',
        f"<thead><tr>{head}</tr></thead>",
        "<tbody>",
    ]
    parts += [
        _row(row, repeated=repeated, flaky=is_flaky, include_details=include_details)
        for row, is_flaky in zip(ordered[:PAGE_SIZE], flaky, strict=False)
    ]
    parts += ["</tbody>", "</table>"]
    if len(ordered) > PAGE_SIZE:
        parts.append(
            f'<noscript><p class="note">… and {len(ordered) - PAGE_SIZE} more rows, which '
            "this page shows with JavaScript; report.json holds every row (and rows.jsonl, "
            "beside the reports of an aeval run).</p></noscript>"
        )
    parts += [
        '<nav id="pages" class="pages" aria-label="Pages of rows" hidden>',
        '<button type="button" id="previous">Previous</button>',
        '<span id="page">Page 1 of 1</span>',
        '<button type="button" id="next">Next</button>',
        "</nav>",
        '<script type="application/json" id="row-data">',
        script_json(
            [
                _record(row, repeated=repeated, flaky=is_flaky, include_details=include_details)
                for row, is_flaky in zip(ordered, flaky, strict=True)
            ]
        ),
        "</script>",
        "</section>",
    ]
    return parts


def _filters(rows: Iterable[EvaluationRow], flaky: int, *, static: int) -> list[str]:
    counts: dict[str, int] = {"flaky": flaky}
    total = 0
    for row in rows:
        total += 1
        counts[row.outcome.value] = counts.get(row.outcome.value, 0) + 1
    counts["all"] = total
    counts["not-passed"] = total - counts.get("passed", 0) - counts.get("not_applicable", 0)
    buttons = "".join(
        f'<button type="button" data-filter="{key}" aria-pressed="{str(key == "all").lower()}">'
        f"{label} ({counts.get(key, 0)})</button>"
        for key, label in _FILTERS
        if key != "not_applicable" or counts.get(key)
    )
    if static < total:
        said = (
            f"the first {static} of {total} rows are shown below, failures first; the others "
            "are shown with JavaScript, and report.json holds every row (and rows.jsonl, "
            "beside the reports of an aeval run)."
        )
    else:
        said = "every row is shown below, failures first."
    return [
        '<form id="filters" class="filters" role="search" hidden>',
        f'<div role="group" aria-label="Show rows">{buttons}</div>',
        '<label for="search">Search</label>',
        '<input type="search" id="search" autocomplete="off" '
        'placeholder="sample, strategy, output, error…">',
        f'<p id="shown" aria-live="polite">Showing {total} of {total} rows</p>',
        "</form>",
        f'<noscript><p class="note">The filters and the search need JavaScript; {said}</p>'
        "</noscript>",
    ]


def _texts(row: EvaluationRow) -> tuple[str, str, str]:
    """The row's score text, the explanation it shows and its error text."""
    outcome = row.outcome
    if row.score is not None:
        score = format_percent(row.score * 100)
    else:
        score = "—" if outcome in _NOT_RUN else "unscored"
    error = str(row.error) if row.error is not None else ""
    explanation = row.explanation or ""
    shown = "" if error and explanation.endswith(error) else explanation
    return score, shown, error


def _visible(text: str) -> str:
    """``text`` as the static rows show it: characters HTML forbids as ``\\x..`` escapes."""
    return text if text.isascii() and text.isprintable() else valid_html(text)


def _visible_value(value: Any) -> Any:
    """``value`` with every text in it (lists of texts, nested) as the static rows show it."""
    if isinstance(value, str):
        return _visible(value)
    if isinstance(value, list):
        return [_visible_value(item) for item in value]
    return value


def _record(
    row: EvaluationRow, *, repeated: bool, flaky: bool, include_details: bool
) -> dict[str, Any]:
    """The row as the script reads it, its text as the static rows show it; keys of empty
    values are left out."""
    record = _raw_record(row, repeated=repeated, flaky=flaky, include_details=include_details)
    return {key: _visible_value(value) for key, value in record.items()}


def _raw_record(
    row: EvaluationRow, *, repeated: bool, flaky: bool, include_details: bool
) -> dict[str, Any]:
    score, explanation, error = _texts(row)
    record: dict[str, Any] = {
        "n": f"{row.name} [repeat {row.repeat + 1}]" if repeated else row.name,
        "o": row.outcome.value,
        "c": score,
        "d": f"{row.duration:.3f}",
    }
    if row.strategy is not None:
        record["s"] = row.strategy
        if not row.function_failed:
            record["ds"] = f"{row.strategy_duration:.3f}"
    if flaky:
        record["k"] = 1
    if row.function_failed:
        record["f"] = 1
    if row.tags:
        record["t"] = list(row.tags)
    cell = truncated(explanation, CELL_LENGTH)
    if cell:
        record["x"] = cell
        whole = truncated(explanation)
        if whole != cell:
            record["X"] = whole
    if row.error is not None:
        record["r"] = truncated(error, CELL_LENGTH)
        whole = truncated(error)
        if whole != record["r"]:
            record["R"] = whole
    if not include_details:
        return record
    sample = row.sample
    record["p"] = truncated(parameters_text(sample))
    record["e"] = truncated(display_value(sample.expected_output))
    record["y"] = truncated(display_value(row.output))
    if row.error is not None and row.error.traceback:
        record["b"] = truncated(row.error.traceback)
    transcript = transcript_of(row)
    if transcript is not None:
        record.update(conversation_record(transcript, row.metadata))
    if row.trace is not None and (transcript is None or not shows_turn_traces(transcript)):
        record["Ts"] = trace_summary(row.trace)
        record["T"] = [view.parts() for view in event_views(row.trace)]
    for key, metadata in (("m", sample.metadata), ("M", row.metadata)):
        if metadata:
            text, notes = _json_text(metadata)
            record[key] = truncated(text)
            if notes:
                record[f"{key}n"] = list(notes)
    return record


def _row(row: EvaluationRow, *, repeated: bool, flaky: bool, include_details: bool) -> str:
    name = f"{row.name} [repeat {row.repeat + 1}]" if repeated else row.name
    strategy = (
        escape(row.strategy) if row.strategy is not None else '<span class="muted">function</span>'
    )
    outcome = row.outcome.value
    score, shown_explanation, error = _texts(row)
    explanation = row.explanation or ""
    error_cell = escape(truncated(error, CELL_LENGTH))
    if row.function_failed:
        error_cell += ' <span class="muted">(the call failed)</span>'
    flag = ' <span class="flag">flaky</span>' if flaky else ""
    cells = [
        f'<th scope="row">{escape(name)}</th>',
        f"<td>{strategy}</td>",
        f'<td><span class="badge {outcome}">{outcome}</span>{flag}</td>',
        f"<td{_NUM}>{score}</td>",
        f'<td class="text">{escape(truncated(shown_explanation, CELL_LENGTH))}</td>',
        f'<td class="text">{error_cell}</td>',
    ]
    searched = [name, row.strategy or "function", *row.tags, explanation, error]
    if include_details:
        searched += [
            parameters_text(row.sample),
            display_value(row.expected_output),
            display_value(row.output),
        ]
        cells.append(f'<td class="details">{_details(row, shown_explanation)}</td>')
    search = "\n".join(truncated(text) for text in searched if text).lower()
    return (
        f'<tr data-outcome="{outcome}" data-flaky="{str(flaky).lower()}" '
        f'data-search="{escape(search)}">{"".join(cells)}</tr>'
    )


def _pre(text: str) -> str:
    return f"<pre>{escape(truncated(text))}</pre>"


def _details(row: EvaluationRow, explanation: str) -> str:
    sample = row.sample
    transcript = transcript_of(row)
    items = [
        ("Parameters", _pre(parameters_text(sample))),
        ("Expected output", _pre(display_value(sample.expected_output))),
        (
            ("Output", _pre(display_value(row.output)))
            if transcript is None
            else ("Conversation", conversation_html(transcript, row.metadata))
        ),
    ]
    if sample.tags:
        items.append(("Tags", escape(", ".join(sample.tags))))
    if explanation:
        items.append(("Explanation", _pre(explanation)))
    error = row.error
    if error is not None:
        said = (
            "<p>The function under test failed, so the strategy could not run.</p>"
            if row.function_failed
            else "<p>The strategy raised.</p>"
        )
        trace = (
            f"<details><summary>Traceback</summary>{_pre(error.traceback)}</details>"
            if error.traceback
            else ""
        )
        items.append(("Error", f"{said}{_pre(str(error))}{trace}"))
    if row.trace is not None and (transcript is None or not shows_turn_traces(transcript)):
        items.append(("Trace", timeline_html(row.trace)))
    if sample.metadata:
        items.append(("Sample metadata", _json(sample.metadata)))
    if row.metadata:
        items.append(("Result metadata", _json(row.metadata)))
    durations = f"function call {row.duration:.3f} s"
    if row.strategy is not None and not row.function_failed:
        durations += f" · strategy {row.strategy_duration:.3f} s"
    items.append(("Duration", durations))
    body = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items)
    return f"<details><summary>Details</summary><dl>{body}</dl></details>"


def _json_text(metadata: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Pretty JSON that stays valid JSON on the page (forbidden characters as ``\\u``
    escapes), and the notes on the values written as stand-ins."""
    data, notes = dumps(dict(metadata), option=orjson.OPT_INDENT_2)
    return html_suspect().sub(_json_escaped, data.decode()), notes


def _json(metadata: Mapping[str, Any]) -> str:
    text, notes = _json_text(metadata)
    stand_ins = "".join(f'<p class="note">{escape(note)}</p>' for note in notes)
    return _pre(text) + stand_ins


ROW_FILTERS = _FILTERS
"""The filters of the rows, ``(key, label)``: ``all``, ``not-passed``, each outcome, ``flaky``."""


def row_html(row: EvaluationRow, *, flaky: bool = False, repeated: bool = False) -> str:
    """One row of the table as the report writes it without scripts, its details included
    (``aeval view`` serves the rows of a run a page at a time with it)."""
    return _row(row, repeated=repeated, flaky=flaky, include_details=True)
