"""The comparison as one self-contained HTML page (``comparison.html``), to review offline or
as a CI artifact.

From the top: the verdict, the two sides with their scores and intervals, the difference with
its interval, the p-value and the test, the power note and any warning; tables per tag and per
strategy; then every changed pair side by side (baseline, candidate) with the words that differ
highlighted (``<del>`` in the baseline's output, ``<ins>`` in the candidate's, from
:mod:`difflib`), and the pairs found on one side only.

Filter buttons (all, regressions, fixes, new errors, newly unscored) work offline through one
small inline script; the address keeps the view (``comparison.html#filter=regressions``).
Without scripts the buttons stay hidden and every changed pair shows. As in the HTML report,
the Content-Security-Policy admits only that script and the inline style and no network, every
value from a run is HTML-escaped, long values are cut (their length shown) and characters HTML
forbids are written as escapes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape

from .._compare._align import PairKey
from .._compare._comparison import ChangedPair, Comparison, format_p, signed
from .._display import display_value
from .._util._numbers import format_number
from ._comparison_terminal import SCOPE_COLUMNS, scope_figures, scope_verdict
from ._header import truncated
from ._page import DETAILS_STYLE, filter_page_style, filter_script, html_page

__all__ = ["highlight_difference", "render_html"]

_STYLE = filter_page_style(
    "90rem",
    head=".verdict { display: inline-block; padding: 0.1rem 0.8rem; border-radius: 1rem; "
    + """color: #ffffff;
  font-weight: 600; }
.better { background: #1a7f37; }
.worse { background: #b42318; }
.same { background: #57606a; }
.banner { margin: 0.5rem 0; padding: 0.5rem 1rem; border: 2px solid #9a6700;
  border-left-width: 0.5rem; background: #fff8c5; color: #4d2d00; font-weight: 600; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; }
"""
    + DETAILS_STYLE,
    table="""#pairs { width: 100%; table-layout: fixed; }
th, td { border: 1px solid #d0d7de; padding: 0.35rem 0.6rem; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
""",
    cells="""pre { margin: 0.25rem 0; padding: 0.5rem; background: #f6f8fa; white-space: pre-wrap;
  overflow-wrap: anywhere; }
del { background: #ffd7d5; text-decoration: line-through; }
ins { background: #ccffd8; text-decoration: none; }
.outcome { font-weight: 600; }
.note { color: #57606a; }
""",
    buttons=".filters button { padding: 0.2rem 0.6rem; border: 1px solid #d0d7de; "
    + """border-radius: 0.4rem;
  background: #f6f8fa; color: inherit; font: inherit; cursor: pointer; }
""",
    rest=".filters p { margin: 0; }\n",
)

_SCRIPT = filter_script(
    """  const table = document.getElementById("pairs");
  if (!form || !table) return;
  const rows = Array.from(table.tBodies[0].rows);
  const buttons = Array.from(form.querySelectorAll("button[data-filter]"));
  const names = new Set(buttons.map((button) => button.dataset.filter));
  const shown = document.getElementById("shown");
  let filter = "all";
  function show(record) {
    let count = 0;
    for (const row of rows) {
      const kinds = (row.dataset.kinds || "").split(" ");
      const visible = filter === "all" || kinds.includes(filter);
      row.hidden = !visible;
      count += visible ? 1 : 0;
    }
    for (const button of buttons) {
      button.setAttribute("aria-pressed", String(button.dataset.filter === filter));
    }
    shown.textContent = `Showing ${count} of ${rows.length} changed pairs`;
    if (!record) return;
    try {
      const hash = filter === "all" ? "" : `#filter=${filter}`;
      history.replaceState(null, "", hash || location.pathname + location.search);
    } catch (refused) {
      // A browser may refuse to rewrite a file:// address; the view is right regardless.
    }
  }
  function read() {
    const wanted = new URLSearchParams(location.hash.slice(1)).get("filter");
    filter = wanted !== null && names.has(wanted) ? wanted : "all";
    show(false);
  }
  for (const button of buttons) {
    button.addEventListener("click", () => {
      filter = button.dataset.filter;
      show(true);
    });
  }
"""
)

_FILTERS = (
    ("all", "All changed"),
    ("regression", "Regressions"),
    ("fix", "Fixes"),
    ("new-error", "New errors"),
    ("newly-unscored", "Newly unscored"),
)
_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")
_VERDICT_CLASS = {"better": "better", "worse": "worse"}


def highlight_difference(old: str, new: str) -> tuple[str, str]:
    """Both texts as escaped HTML, what only the old has in ``<del>``, the new in ``<ins>``.

    Texts are compared word by word (runs of letters and digits, of spaces, and single signs)
    with :class:`difflib.SequenceMatcher`.
    """
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    left: list[str] = []
    right: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        removed, added = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if tag == "equal":
            left.append(removed)
            right.append(added)
            continue
        if removed:
            left.append(f"<del>{removed}</del>")
        if added:
            right.append(f"<ins>{added}</ins>")
    return "".join(left), "".join(right)


def render_html(comparison: Comparison, *, margin: float = 0.0) -> str:
    """The comparison as a self-contained HTML page."""
    c = comparison
    verdict = scope_verdict(c, margin)
    body = [
        "<h1>Comparison</h1>",
        f'<p>Verdict: <span class="verdict {_VERDICT_CLASS.get(c.verdict, "same")}">'
        f"{escape(verdict)}</span></p>",
        *(f'<div class="banner" role="alert">{escape(w)}</div>' for w in c.warnings),
        _facts(c),
        *_scopes("Per tag", "Tag", c.tag_comparisons, margin),
        *_scopes("Per strategy", "Strategy", c.strategy_comparisons, margin),
        *_changed(c),
        *_only("baseline", c.only_in_baseline),
        *_only("candidate", c.only_in_candidate),
    ]
    return html_page(
        title=f"Comparison: {escape(verdict)}", style=_STYLE, body=body, script=_SCRIPT
    )


def _percent(score: float, interval: tuple[float, float], c: Comparison) -> str:
    low, high = interval
    return (
        f"{format_number(score)}% ({c.confidence * 100:g}% CI {format_number(low)}–"
        f"{format_number(high)})"
    )


def _facts(c: Comparison) -> str:
    low, high = c.interval
    facts = [
        ("Baseline", f"{c.baseline_label}: {_percent(c.baseline_score, c.baseline_interval, c)}"),
        (
            "Candidate",
            f"{c.candidate_label}: {_percent(c.candidate_score, c.candidate_interval, c)}",
        ),
        (
            "Difference",
            f"{signed(c.difference)} points ({c.confidence * 100:g}% CI {signed(low)} to "
            f"{signed(high)})",
        ),
        ("p-value", f"{format_p(c.p_value)} ({c.test})"),
        (
            "Aligned",
            f"{c.samples} samples, {c.pairs} (sample, strategy) pairs; "
            f"{len(c.only_in_baseline)} only in the baseline, {len(c.only_in_candidate)} only "
            "in the candidate",
        ),
        (
            "Changed",
            f"{len(c.regressions)} regressions, {len(c.fixes)} fixes, {len(c.new_errors)} new "
            f"errors, {len(c.newly_unscored)} newly unscored",
        ),
        ("Power", c.power_note),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return f'<dl class="facts">{items}</dl>'


def _grid(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A table whose first cell of each row heads it; the middle columns are numbers."""
    last = len(headers) - 1

    def kind(i: int) -> str:
        return "" if i in (0, last) else ' class="num"'

    head = "".join(f'<th scope="col"{kind(i)}>{h}</th>' for i, h in enumerate(headers))
    body = [
        f'<tr><th scope="row">{cells[0]}</th>'
        + "".join(f"<td{kind(i)}>{cell}</td>" for i, cell in enumerate(cells) if i)
        + "</tr>"
        for cells in rows
    ]
    return ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>", *body, "</tbody>", "</table>"]


def _scopes(title: str, kind: str, scopes: Mapping[str, Comparison], margin: float) -> list[str]:
    if not scopes:
        return []
    headers = [kind, *SCOPE_COLUMNS]
    rows = []
    for name, s in scopes.items():
        rows.append(
            [
                escape(name),
                *scope_figures(s),
                escape(format_p(s.p_value).removeprefix("p = ")),
                escape(format_p(s.adjusted_p_value).removeprefix("p = ")),
                escape(scope_verdict(s, margin)),
            ]
        )
    return ["<section>", f"<h2>{title}</h2>", *_grid([*headers, "Verdict"], rows), "</section>"]


def _changed(c: Comparison) -> list[str]:
    kinds: dict[PairKey, list[str]] = {}
    pairs: dict[PairKey, ChangedPair] = {}
    for kind, found in (
        ("regression", c.regressions),
        ("fix", c.fixes),
        ("new-error", c.new_errors),
        ("newly-unscored", c.newly_unscored),
    ):
        for pair in found:
            pairs.setdefault(pair.key, pair)
            kinds.setdefault(pair.key, []).append(kind)
    parts = ['<section id="changed">', f"<h2>Changed pairs: {len(pairs)}</h2>"]
    if not pairs:
        return [*parts, '<p class="note">No pair changed its verdict.</p>', "</section>"]
    counts = {key: sum(key in k for k in kinds.values()) for key, _ in _FILTERS}
    counts["all"] = len(pairs)
    buttons = "".join(
        f'<button type="button" data-filter="{key}" aria-pressed="{str(key == "all").lower()}">'
        f"{label} ({counts[key]})</button>"
        for key, label in _FILTERS
    )
    parts += [
        '<form id="filters" class="filters" hidden>',
        f'<div role="group" aria-label="Show pairs">{buttons}</div>',
        f'<p id="shown" aria-live="polite">Showing {len(pairs)} of {len(pairs)} changed pairs</p>',
        "</form>",
        '<noscript><p class="note">The filters need JavaScript; every changed pair is shown '
        "below.</p></noscript>",
        '<table id="pairs">',
        '<thead><tr><th scope="col">Sample</th><th scope="col">Baseline</th>'
        '<th scope="col">Candidate</th></tr></thead>',
        "<tbody>",
    ]
    parts += [_pair_row(pair, kinds[key]) for key, pair in pairs.items()]
    parts += ["</tbody>", "</table>", "</section>"]
    return parts


def _side(pair: ChangedPair, side: str, output: str) -> str:
    rows = pair.baseline if side == "baseline" else pair.candidate
    first = rows[0]
    verdict = pair.verdict_on("baseline" if side == "baseline" else "candidate")
    cell = f'<span class="outcome">{escape(verdict)}</span><pre>{output}</pre>'
    reason = str(first.error) if first.error is not None else first.explanation
    if reason:
        cell += f'<p class="note">{escape(truncated(reason, 500))}</p>'
    return f"<td>{cell}</td>"


def _pair_row(pair: ChangedPair, kinds: Sequence[str]) -> str:
    old = truncated(display_value(pair.baseline_output))
    new = truncated(display_value(pair.candidate_output))
    left, right = highlight_difference(old, new)
    name = escape(pair.sample)
    if pair.strategy is not None:
        name += f'<br><span class="note">{escape(pair.strategy)}</span>'
    expected = escape(truncated(display_value(pair.expected_output)))
    details = f"<details><summary>Expected output</summary><pre>{expected}</pre></details>"
    if pair.tags:
        details += f'<p class="note">Tags: {escape(", ".join(pair.tags))}</p>'
    return (
        f'<tr data-kinds="{" ".join(kinds)}"><th scope="row">{name}{details}</th>'
        f"{_side(pair, 'baseline', left)}{_side(pair, 'candidate', right)}</tr>"
    )


def _only(side: str, keys: Sequence[PairKey]) -> list[str]:
    if not keys:
        return []
    items = "".join(f"<li>{escape(str(key))}</li>" for key in keys)
    return [
        "<section>",
        f"<h2>Only in the {side}: {len(keys)} (not compared)</h2>",
        f"<ul>{items}</ul>",
        "</section>",
    ]
