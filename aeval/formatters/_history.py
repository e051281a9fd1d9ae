"""A run history (and a list of runs) as JSON, Markdown and a self-contained HTML page.

The HTML page draws the pass rate of each run with its 95% interval as an inline SVG chart
(no script, no network: its Content-Security-Policy admits only its inline style), followed
by the table of runs. Every value that comes from the user (names, tags, labels) is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

import orjson

from .._store._values import HistoryPoint, RunSummary
from .._util._jsonsafe import safe_text
from .._util._numbers import format_interval, format_number, format_percent
from ._escape import markdown_inline
from ._page import BASE_STYLE, html_page, main_style

__all__ = [
    "History",
    "commit_text",
    "history_html",
    "history_json",
    "history_markdown",
    "runs_json",
    "sparkline",
    "utc",
]

_BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class History:
    """The points of one history and what was asked for.

    Attributes:
        name: The runs' name.
        points: The points, oldest first.
        tag: The tag the points are restricted to, if any.
        strategy: The strategy the points are restricted to, if any.
        since: The earliest start asked for (Unix time), if any.
    """

    name: str
    points: Sequence[HistoryPoint]
    tag: str | None = None
    strategy: str | None = None
    since: float | None = None

    @property
    def subject(self) -> str:
        """``overall``, ``tag smoke`` or ``strategy Judge``."""
        if self.tag is not None:
            return f"tag {self.tag}"
        if self.strategy is not None:
            return f"strategy {self.strategy}"
        return "overall"


def utc(moment: float | None) -> str:
    """A Unix time as ``2026-11-30 19:50 UTC`` (``-`` for ``None``)."""
    if moment is None:
        return "-"
    return f"{datetime.fromtimestamp(moment, UTC):%Y-%m-%d %H:%M} UTC"


def _iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


def sparkline(values: Sequence[float]) -> str:
    """One block character per value, scaled from the lowest value to the highest.

    Equal values give a flat line at mid height.
    """
    if not values:
        return ""
    low, high = min(values), max(values)
    if high - low < 1e-9:
        return _BARS[3] * len(values)
    top = len(_BARS) - 1
    return "".join(_BARS[round((value - low) / (high - low) * top)] for value in values)


def commit_text(commit: str | None, dirty: bool | None) -> str:
    """The short commit, with ``*`` when the working tree was dirty (``-`` without a commit)."""
    if commit is None:
        return "-"
    return commit[:10] + ("*" if dirty else "")


def _scored(run: HistoryPoint | RunSummary) -> dict[str, Any]:
    """The score of a run (or of its rows of a tag or strategy), its interval, and the rows it
    is over."""
    return {
        "score": run.score,
        "ci_low": run.interval[0],
        "ci_high": run.interval[1],
        "rows": run.rows,
        "passed": run.passed,
    }


def _point(point: HistoryPoint) -> dict[str, Any]:
    return {
        "run_id": point.run_id,
        "started_at": _iso(point.started_at),
        **_scored(point),
        "samples": point.samples,
        "complete": point.complete,
        "git_commit": point.git_commit,
        "git_dirty": point.git_dirty,
        "labels": list(point.labels),
        "shard": point.shard,
    }


def history_json(history: History) -> str:
    """The history as indented JSON: what was asked for, then one object per run."""
    document = {
        "name": history.name,
        "tag": history.tag,
        "strategy": history.strategy,
        "since": _iso(history.since),
        "confidence": 0.95,
        "points": [_point(point) for point in history.points],
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def runs_json(runs: Sequence[RunSummary]) -> str:
    """The runs as an indented JSON list, oldest first."""
    items = [
        {
            "id": run.id,
            "name": run.name,
            "started_at": _iso(run.started_at),
            "finished_at": _iso(run.finished_at),
            "complete": run.complete,
            **_scored(run),
            "failed": run.failed,
            "unscored": run.unscored,
            "errors": run.errors,
            "skipped": run.skipped,
            "samples": run.samples,
            "samples_expected": run.samples_expected,
            "git_commit": run.git_commit,
            "git_dirty": run.git_dirty,
            "config_hash": run.config_hash,
            "models": list(run.models),
            "labels": list(run.labels),
            "aeval_version": run.aeval_version,
            "shard": run.shard,
        }
        for run in runs
    ]
    return orjson.dumps(items, option=orjson.OPT_INDENT_2).decode() + "\n"


def _spread(points: Sequence[HistoryPoint]) -> str:
    scores = [point.score for point in points]
    line = sparkline(scores)
    return (
        f"{line}  {format_percent(scores[0])} → {format_percent(scores[-1])} "
        f"(lowest {format_percent(min(scores))}, highest {format_percent(max(scores))})"
    )


def history_markdown(history: History) -> str:
    """The history as Markdown: a title, the sparkline and the table of runs."""
    lines = [
        f"# History of {markdown_inline(history.name)} ({markdown_inline(history.subject)})",
        "",
    ]
    points = history.points
    if not points:
        return safe_text("\n".join([*lines, "No run to show.", ""]))
    lines += [
        f"Pass rate of {len(points)} run(s), oldest first, with 95% intervals clustered by "
        "sample. A commit marked `*` was run with uncommitted changes.",
        "",
        f"`{_spread(points)}`",
        "",
        "| Run | Started | Commit | Score | 95% CI | Samples | Rows | Note |",
        "|-----|---------|--------|------:|-------:|--------:|-----:|------|",
    ]
    for point in points:
        note = ", ".join(
            [
                *([] if point.complete else ["partial"]),
                *(markdown_inline(label) for label in point.labels),
            ]
        )
        lines.append(
            f"| {point.run_id} | {utc(point.started_at)} | "
            f"{markdown_inline(commit_text(point.git_commit, point.git_dirty))} | "
            f"{format_percent(point.score)} | {format_interval(point.interval)} | "
            f"{point.samples} | {point.rows} | {note} |"
        )
    return safe_text("\n".join([*lines, ""]))


_STYLE = (
    BASE_STYLE
    + main_style("64rem")
    + """h1 { margin: 0 0 0.5rem; font-size: 1.6rem; }
.note { color: #57606a; }
svg { display: block; width: 100%; max-width: 60rem; height: auto; margin: 1rem 0; }
svg text { font-size: 12px; fill: #57606a; }
.grid { stroke: #d0d7de; stroke-width: 1; }
.band { stroke: #0969da; stroke-opacity: 0.35; stroke-width: 6; stroke-linecap: round; }
.line { fill: none; stroke: #0969da; stroke-width: 2; }
.dot { fill: #0969da; stroke: #ffffff; stroke-width: 1.5; }
.dot.partial { fill: #ffffff; stroke: #9a6700; stroke-width: 2; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.6rem; text-align: left; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
"""
)
_WIDTH, _HEIGHT = 720, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 16, 12, 28


def _chart(points: Sequence[HistoryPoint]) -> str:
    """An SVG line of the scores over the runs (evenly spaced), each with its interval."""
    inner_w = _WIDTH - _LEFT - _RIGHT
    inner_h = _HEIGHT - _TOP - _BOTTOM
    count = len(points)

    def x(index: int) -> float:
        return _LEFT + (inner_w / 2 if count == 1 else inner_w * index / (count - 1))

    def y(score: float) -> float:
        return _TOP + inner_h * (1 - score / 100)

    parts = [
        f'<svg viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="Pass rate per run, oldest first">'
    ]
    for level in (0, 25, 50, 75, 100):
        height = y(level)
        parts.append(
            f'<line class="grid" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" '
            f'y1="{height:.1f}" y2="{height:.1f}"/>'
            f'<text x="{_LEFT - 6}" y="{height + 4:.1f}" text-anchor="end">{level}%</text>'
        )
    for index, point in enumerate(points):
        low, high = point.interval
        parts.append(
            f'<line class="band" x1="{x(index):.1f}" x2="{x(index):.1f}" '
            f'y1="{y(low):.1f}" y2="{y(high):.1f}"/>'
        )
    if count > 1:
        path = " ".join(f"{x(i):.1f},{y(p.score):.1f}" for i, p in enumerate(points))
        parts.append(f'<polyline class="line" points="{path}"/>')
    for index, point in enumerate(points):
        kind = "dot" if point.complete else "dot partial"
        label = (
            f"{point.run_id}: {format_percent(point.score)} "
            f"(95% CI {format_number(point.interval[0])}–{format_number(point.interval[1])})"
            f"{'' if point.complete else ', partial'}"
        )
        parts.append(
            f'<circle class="{kind}" cx="{x(index):.1f}" cy="{y(point.score):.1f}" r="4">'
            f"<title>{escape(label)}</title></circle>"
        )
    for index, anchor in ((0, "start"), (count - 1, "end")):
        if count > 1 or index == 0:
            parts.append(
                f'<text x="{x(index):.1f}" y="{_HEIGHT - 8}" '
                f'text-anchor="{anchor if count > 1 else "middle"}">'
                f"{escape(utc(points[index].started_at))}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def history_html(history: History) -> str:
    """The history as one self-contained HTML page: the chart, then the table of runs."""
    title = escape(f"History of {history.name} ({history.subject})")
    points = history.points
    body: list[str] = [f"<h1>{title}</h1>"]
    if not points:
        body.append('<p class="note">No run to show.</p>')
    else:
        body += [
            f'<p class="note">Pass rate of {len(points)} run(s), oldest first; the bars are '
            "95% intervals clustered by sample; hollow dots are partial runs; a commit marked "
            "* was run with uncommitted changes.</p>",
            _chart(points),
            "<table>",
            "<thead><tr><th>Run</th><th>Started</th><th>Commit</th><th>Score</th>"
            "<th>95% CI</th><th>Samples</th><th>Rows</th><th>Note</th></tr></thead>",
            "<tbody>",
        ]
        for point in points:
            note = ", ".join([*([] if point.complete else ["partial"]), *point.labels])
            body.append(
                f"<tr><td>{escape(point.run_id)}</td><td>{escape(utc(point.started_at))}</td>"
                f"<td>{escape(commit_text(point.git_commit, point.git_dirty))}</td>"
                f'<td class="num">{format_percent(point.score)}</td>'
                f'<td class="num">{escape(format_interval(point.interval))}</td>'
                f'<td class="num">{point.samples}</td><td class="num">{point.rows}</td>'
                f"<td>{escape(note)}</td></tr>"
            )
        body += ["</tbody>", "</table>"]
    return html_page(title=title, style=_STYLE, body=body)
