"""The HTML report (``report.html``): one self-contained page, readable offline and as a CI
artifact.

No external stylesheet, script or font; the CSS is inline and there is no script at all. The
page shows the title and the global score, the counts, the model usage when strategies called
models, a table per tag and per strategy, then one table of every row held, in report order
(sample, strategy, outcome badge, score, explanation, error), each row's output and expected
output folded in a ``<details>`` element. Every value that comes from the user (title,
names, tags, outputs, explanations, errors) is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any, ClassVar

from .._numbers import format_number, format_percent
from ._base import check_options
from ._values import display_value

if TYPE_CHECKING:
    from .._report import EvaluationReport
    from .._results import EvaluationRow

__all__ = ["HtmlFormatter"]

_DEFAULTS: dict[str, Any] = {"title": "Evaluation Report", "include_details": True}
_NUM = ' class="num"'

_STYLE = """
:root { color: #1f2328; background: #ffffff; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
  line-height: 1.5; }
main { max-width: 72rem; margin: 0 auto; padding: 1.5rem; }
h1 { margin: 0 0 0.5rem; font-size: 1.75rem; }
h2 { margin-top: 2rem; font-size: 1.25rem; }
.score { margin: 0; font-size: 1.1rem; }
.score strong { display: block; font-size: 3rem; line-height: 1.1; }
.counts { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; list-style: none; padding: 0; }
.note, .muted { color: #57606a; }
table { border-collapse: collapse; width: 100%; margin-top: 0.5rem; }
th, td { border: 1px solid #d0d7de; padding: 0.35rem 0.6rem; text-align: left;
  vertical-align: top; }
th { background: #f6f8fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 0.5rem; border-radius: 1rem; color: #ffffff;
  font-size: 0.85rem; font-weight: 600; text-transform: uppercase; }
.passed { background: #1a7f37; }
.failed { background: #b42318; }
.unscored { background: #7a4d00; }
.error { background: #6639ba; }
pre { margin: 0.25rem 0 0.5rem; padding: 0.5rem; background: #f6f8fa; white-space: pre-wrap;
  overflow-wrap: anywhere; }
summary { cursor: pointer; color: #0550ae; }
dt { font-weight: 600; }
dd { margin: 0; }
"""


class HtmlFormatter:
    """Renders a report as one self-contained HTML page (see the module docstring).

    Options:
        title (str): The page's title and heading (default ``"Evaluation Report"``).
        include_details (bool): Each row's output and expected output in a ``<details>``
            element (default ``True``); ``False`` leaves the outputs out.
    """

    name: ClassVar[str] = "html"
    extension: ClassVar[str] = ".html"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report``.

        Raises:
            FormatError: An unknown option, or an option of the wrong type.
        """
        resolved = check_options(self.name, options, _DEFAULTS)
        title = escape(resolved["title"])
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title}</title>",
            f"<style>{_STYLE}</style>",
            "</head>",
            "<body>",
            "<main>",
            f"<h1>{title}</h1>",
            f'<p class="score">Global score <strong>{format_percent(report.score)}</strong></p>',
            _counts(report),
            *_usage(report),
            *_tag_table(report),
            *_strategy_table(report),
            *_rows(report, include_details=resolved["include_details"]),
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
        return "\n".join(parts)


def _table(heading: str, headers: list[str], rows: list[list[str]]) -> list[str]:
    head = "".join(
        f'<th scope="col"{"" if i == 0 else _NUM}>{h}</th>' for i, h in enumerate(headers)
    )
    body = [
        f'<tr><th scope="row">{cells[0]}</th>'
        + "".join(f"<td{_NUM}>{cell}</td>" for cell in cells[1:])
        + "</tr>"
        for cells in rows
    ]
    return [
        "<section>",
        f"<h2>{heading}</h2>",
        "<table>",
        f"<thead><tr>{head}</tr></thead>",
        "<tbody>",
        *body,
        "</tbody>",
        "</table>",
        "</section>",
    ]


def _counts(report: EvaluationReport) -> str:
    counts = [
        ("Evaluations", report.evaluation_count),
        ("Passed", report.passed_count),
        ("Failed", report.failed_count),
        ("Unscored", report.unscored_count),
        ("Errors", report.error_count),
    ]
    items = "".join(f"<li>{label}: <strong>{count}</strong></li>" for label, count in counts)
    return f'<ul class="counts">{items}</ul>'


def _usage(report: EvaluationReport) -> list[str]:
    usage = report.usage
    if not (usage.retries or usage.total_tokens or usage.cost):
        return []
    line = (
        f"Model usage: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
        f"tokens · {usage.retries} retries"
    )
    if usage.cost:
        line += f" · ${usage.cost:.4f}"
    return [f'<p class="usage">{line}</p>']


def _tag_table(report: EvaluationReport) -> list[str]:
    stats = report.tag_statistics
    if not stats:
        return []
    rows = [
        [escape(tag), str(s.total), str(s.passed), format_percent(s.score)]
        for tag, s in stats.items()
    ]
    return _table("Score per tag", ["Tag", "Rows", "Passed", "Score"], rows)


def _strategy_table(report: EvaluationReport) -> list[str]:
    stats = report.strategy_statistics
    if not stats:
        return []
    headers = ["Strategy", "Rows", "Passed", "Failed", "Unscored", "Errors", "Score", "Mean score"]
    rows = [
        [
            escape(name),
            *(str(n) for n in (s.total, s.passed, s.failed, s.unscored, s.errors)),
            format_percent(s.score),
            "—" if s.mean_score is None else format_number(s.mean_score),
        ]
        for name, s in stats.items()
    ]
    return _table("Score per strategy", headers, rows)


def _rows(report: EvaluationReport, *, include_details: bool) -> list[str]:
    parts = ["<section>", "<h2>Evaluations</h2>"]
    held = len(report.evaluations)
    if not report.holds_all_rows and held < report.evaluation_count:
        parts.append(
            f'<p class="note">This report holds {held} of {report.evaluation_count} '
            "evaluations; the others were not kept.</p>"
        )
    if not held:
        parts += ['<p class="note">No evaluations to show.</p>', "</section>"]
        return parts
    headers = ["Sample", "Strategy", "Outcome", "Score", "Explanation", "Error"]
    if include_details:
        headers.append("Outputs")
    head = "".join(f'<th scope="col"{_NUM if h == "Score" else ""}>{h}</th>' for h in headers)
    repeated = any(row.repeat for row in report.evaluations)
    parts += ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    parts += [
        _row(row, repeated=repeated, include_details=include_details) for row in report.evaluations
    ]
    parts += ["</tbody>", "</table>", "</section>"]
    return parts


def _row(row: EvaluationRow, *, repeated: bool, include_details: bool) -> str:
    name = f"{row.name} [repeat {row.repeat + 1}]" if repeated else row.name
    strategy = (
        escape(row.strategy) if row.strategy is not None else '<span class="muted">function</span>'
    )
    outcome = row.outcome.value
    score = "unscored" if row.score is None else format_percent(row.score * 100)
    error = str(row.error) if row.error is not None else ""
    explanation = row.explanation or ""
    if error and explanation.endswith(error):
        explanation = ""
    cells = [
        f'<th scope="row">{escape(name)}</th>',
        f"<td>{strategy}</td>",
        f'<td><span class="badge {outcome}">{outcome}</span></td>',
        f"<td{_NUM}>{score}</td>",
        f"<td>{escape(explanation)}</td>",
        f"<td>{escape(error)}</td>",
    ]
    if include_details:
        cells.append(
            "<td><details><summary>Output and expected output</summary><dl>"
            f"<dt>Output</dt><dd><pre>{escape(display_value(row.output))}</pre></dd>"
            "<dt>Expected output</dt>"
            f"<dd><pre>{escape(display_value(row.expected_output))}</pre></dd>"
            "</dl></details></td>"
        )
    return f"<tr>{''.join(cells)}</tr>"
