"""The HTML report's page: :class:`~aeval.formatters.html.HtmlFormatter` loads this module
when it renders one, so declaring the formatters (as ``aeval run`` does) does not import it."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING

from .._reporting._judging import JUDGE_COLUMNS, judge_rows, panel_line
from .._util._numbers import format_interval, format_number, format_percent
from ._header import (
    header_facts,
    partial_banner,
    score_text,
    strategy_counts,
    truncated,
)
from ._html_rows import CELL_LENGTH, rows_script, rows_section
from ._page import DETAILS_STYLE, filter_page_style, html_page
from ._transcript_view import transcript_of

if TYPE_CHECKING:
    from .._reporting._judging import Calibration
    from .._reporting._report import EvaluationReport
    from .._reporting._values import RepeatStatistics

__all__ = ["render_report"]

_NUM = ' class="num"'
_WARNING = ' class="warning"'

_STYLE = filter_page_style(
    "80rem",
    head="""h3 { margin-top: 1.25rem; font-size: 1.05rem; }
.banner { margin: 0 0 1rem; padding: 0.75rem 1rem; border: 2px solid #9a6700;
  border-left-width: 0.5rem; background: #fff8c5; color: #4d2d00; font-weight: 600; }
.score { margin: 0; font-size: 1.1rem; }
.score strong { display: block; font-size: 3rem; line-height: 1.1; }
.interval { color: #57606a; }
.counts { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; list-style: none; padding: 0; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; }
.facts dd.warning { color: #9a6700; font-weight: 600; }
.note, .muted { color: #57606a; }
""",
    table="""#rows { width: 100%; }
th, td { border: 1px solid #d0d7de; padding: 0.35rem 0.6rem; text-align: left;
  vertical-align: top; overflow-wrap: break-word; }
td.text { overflow-wrap: anywhere; }
td.details { min-width: 18rem; }
""",
    cells=""".badge { display: inline-block; padding: 0 0.5rem; border-radius: 1rem; color: #ffffff;
  font-size: 0.85rem; font-weight: 600; text-transform: uppercase; white-space: nowrap; }
.passed { background: #1a7f37; }
.failed { background: #b42318; }
.unscored { background: #7a4d00; }
.error { background: #6639ba; }
.skipped { background: #57606a; }
.not_applicable { background: #8c959f; }
.flag { display: inline-block; margin-left: 0.25rem; padding: 0 0.4rem; border: 1px solid #9a6700;
  border-radius: 1rem; color: #7a4d00; font-size: 0.8rem; }
""",
    buttons=""".pages { display: flex; align-items: center; gap: 0.75rem; margin-top: 0.75rem; }
.filters button, .pages button { padding: 0.2rem 0.6rem; border: 1px solid #d0d7de;
  border-radius: 0.4rem; background: #f6f8fa; color: inherit; font: inherit; cursor: pointer; }
""",
    rest=""".pages button:disabled { opacity: 0.5; cursor: default; }
.filters input { padding: 0.2rem 0.4rem; font: inherit; min-width: 16rem; }
.filters p { margin: 0; }
pre { margin: 0.25rem 0 0.5rem; padding: 0.5rem; background: #f6f8fa; white-space: pre-wrap;
  overflow-wrap: anywhere; }
summary { cursor: pointer; color: #0550ae; }
"""
    + DETAILS_STYLE,
)


def render_report(report: EvaluationReport, *, title: str, include_details: bool) -> str:
    """The page of ``report``, its options checked by ``HtmlFormatter``."""
    shown = escape(title)
    banner = partial_banner(report)
    rows = rows_section(report, include_details=include_details)
    body = [
        *([f'<div class="banner" role="alert">{escape(banner)}</div>'] if banner else []),
        f"<h1>{shown}</h1>",
        _score(report),
        _counts(report),
        _facts(report),
        *_tag_table(report),
        *_strategy_table(report),
        *(part for c in report.calibration.values() for part in _calibration(c)),
        *_judges(report),
        *_repeats(report.repeat_statistics),
        *rows,
    ]
    return html_page(
        title=f"{shown}{' (PARTIAL RUN)' if banner else ''}",
        style=_STYLE,
        body=body,
        script=_script(report, details=include_details),
        run_script=bool(report.evaluations),
    )


def _grid(headers: Iterable[str], rows: Iterable[Iterable[str]], *, labels: int = 1) -> list[str]:
    """A table whose first cell of each row heads it; columns from ``labels`` on are numbers."""
    head = "".join(
        f'<th scope="col"{"" if i < labels else _NUM}>{h}</th>' for i, h in enumerate(headers)
    )
    body = []
    for cells in rows:
        first, *rest = cells
        body.append(
            f'<tr><th scope="row">{first}</th>'
            + "".join(
                f"<td{'' if i + 1 < labels else _NUM}>{cell}</td>" for i, cell in enumerate(rest)
            )
            + "</tr>"
        )
    return ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>", *body, "</tbody>", "</table>"]


def _table(heading: str, headers: list[str], rows: list[list[str]]) -> list[str]:
    return ["<section>", f"<h2>{heading}</h2>", *_grid(headers, rows), "</section>"]


def _score(report: EvaluationReport) -> str:
    percent, _, rest = score_text(report).partition(" ")
    return (
        f'<p class="score">Global score <strong>{percent}</strong> '
        f'<span class="interval">{escape(rest)}</span></p>'
    )


def _counts(report: EvaluationReport) -> str:
    counts = [
        ("Evaluations", report.evaluation_count),
        ("Passed", report.passed_count),
        ("Failed", report.failed_count),
        ("Unscored", report.unscored_count),
        ("Skipped", report.skipped_count),
        ("Errors", report.error_count),
        ("Failed calls", report.function_error_count),
    ]
    if report.not_applicable_count:
        counts.insert(5, ("Not applicable", report.not_applicable_count))
    if report.repeat_statistics is not None:
        counts.append(("Flaky pairs", len(report.flaky)))
    items = "".join(f"<li>{label}: <strong>{count}</strong></li>" for label, count in counts)
    return f'<ul class="counts">{items}</ul>'


def _script(report: EvaluationReport, *, details: bool) -> str:
    """The rows' script; with the timeline builder only when some row's details show a trace,
    and the turns builder only when some row is a conversation, so a report without either
    is the page it always was."""
    rows = report.evaluations
    traced = details and any(row.trace is not None for row in rows)
    conversations = details and any(transcript_of(row) is not None for row in rows)
    return rows_script(traced=traced, conversations=conversations)


def _facts(report: EvaluationReport) -> str:
    items = "".join(
        f"<dt>{escape(label)}</dt><dd{_WARNING if label == 'Warning' else ''}>{escape(value)}</dd>"
        for label, value in header_facts(report)
    )
    return f'<dl class="facts">{items}</dl>'


def _tag_table(report: EvaluationReport) -> list[str]:
    stats = report.tag_statistics
    if not stats:
        return []
    inapplicable = report.not_applicable_count > 0
    rows = [
        [
            escape(tag),
            str(s.samples),
            str(s.total),
            str(s.passed),
            *([str(s.not_applicable)] if inapplicable else []),
            format_percent(s.score),
            format_interval(s.confidence_interval()),
        ]
        for tag, s in stats.items()
    ]
    headers = ["Tag", "Samples", "Rows", "Passed", "Score", "95% CI"]
    if inapplicable:
        headers.insert(4, "Not applicable")
    return _table("Score per tag", headers, rows)


def _strategy_table(report: EvaluationReport) -> list[str]:
    stats = report.strategy_statistics
    if not stats:
        return []
    columns, counts = strategy_counts(report)
    headers = ["Strategy", *columns, "Score", "95% CI", "Mean score"]
    rows = [
        [
            escape(name),
            *counts[name],
            format_percent(s.score),
            format_interval(s.confidence_interval()),
            "—" if s.mean_score is None else format_number(s.mean_score),
        ]
        for name, s in stats.items()
    ]
    return _table("Score per strategy", headers, rows)


def _calibration(calibration: Calibration) -> list[str]:
    (pass_pass, pass_fail), (fail_pass, fail_fail) = calibration.confusion
    said = calibration.describe()
    if calibration.unjudged:
        said += f" ({calibration.unjudged} labelled rows without a verdict)"
    parts = [
        '<section class="calibration">',
        f"<h2>Judge calibration: {escape(calibration.strategy)}</h2>",
        f"<p>Verdicts against the samples' human labels: {escape(said)}.</p>",
        *_grid(
            ["", "Verdict pass", "Verdict fail"],
            [
                ["Label pass", str(pass_pass), str(pass_fail)],
                ["Label fail", str(fail_pass), str(fail_fail)],
            ],
        ),
    ]
    if calibration.disagreements:
        parts += [
            f"<h3>Disagreements ({len(calibration.disagreements)})</h3>",
            *_grid(
                ["Sample", "Label", "Verdict", "Explanation", "Score"],
                (
                    [
                        escape(d.sample if not d.repeat else f"{d.sample} [repeat {d.repeat + 1}]"),
                        "pass" if d.label else "fail",
                        "pass" if d.passed else "fail",
                        escape(truncated(d.explanation or "", CELL_LENGTH)),
                        "—" if d.score is None else format_percent(100 * d.score),
                    ]
                    for d in calibration.disagreements
                ),
                labels=4,
            ),
        ]
    parts.append("</section>")
    return parts


def _judges(report: EvaluationReport) -> list[str]:
    stats = report.judge_statistics
    if not stats:
        return []
    rows = [[escape(cell) for cell in row] for row in judge_rows(stats)]
    parts = [
        '<section id="judges">',
        "<h2>Judges</h2>",
        *_grid([column.capitalize() for column in JUDGE_COLUMNS], rows, labels=2),
    ]
    for strategy, stat in stats.items():
        line = panel_line(strategy, stat)
        if line is not None:
            parts.append(f"<p>{escape(line)}</p>")
    parts.append("</section>")
    return parts


def _repeats(stats: RepeatStatistics | None) -> list[str]:
    if stats is None:
        return []
    parts = [
        '<section id="repeats">',
        "<h2>Repeats</h2>",
        f"<p>Each sample ran {stats.repeats} times: {stats.pairs} (sample, strategy) pairs, "
        f"{len(stats.flaky)} of them flaky.</p>",
        *_grid(
            ["k", "pass@k", "pass^k"],
            (
                [str(k), format_percent(100 * stats.pass_at_k[k]), format_percent(100 * at_all)]
                for k, at_all in sorted(stats.pass_hat_k.items())
            ),
        ),
        '<p class="note">pass@k: the chance that at least one of k runs passes; pass^k: that '
        "all k pass (unbiased estimates, averaged over the pairs).</p>",
    ]
    if stats.output_agreement is not None:
        parts.append(
            f"<p>Output agreement: {format_percent(100 * stats.output_agreement)} of repeats "
            f"give the most common output ({len(stats.inconsistent)} samples disagree).</p>"
        )
    if stats.flaky:
        parts += [
            "<h3>Flaky pairs</h3>",
            *_grid(
                ["Sample", "Strategy", "Passed", "Pass rate"],
                (
                    [
                        escape(case.sample),
                        escape(case.strategy) if case.strategy is not None else "(function)",
                        f"{case.passed}/{case.runs} passed",
                        format_percent(case.pass_rate),
                    ]
                    for case in stats.flaky
                ),
                labels=2,
            ),
        ]
    if stats.inconsistent:
        parts += [
            "<h3>Inconsistent outputs</h3>",
            *_grid(
                ["Sample", "Agreement"],
                ([escape(name), format_percent(100 * share)] for name, share in stats.inconsistent),
            ),
        ]
    parts.append("</section>")
    return parts
