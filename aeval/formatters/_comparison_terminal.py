"""The comparison in the terminal: rich tables (``aeval compare``, ``comparison.print()``)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from .._compare._align import PairKey
from .._compare._comparison import ChangedPair, Comparison, format_p, signed
from .._display import display_value
from .._util._numbers import format_number, truncate
from ._terminal import plain, print_line, print_table, terminal_console

__all__ = ["SCOPE_COLUMNS", "print_comparison", "scope_figures", "scope_verdict", "text_of"]

_PAIRS_SHOWN = 20
_OUTPUT_LENGTH = 80
_TEXT_WIDTH = 120


def _percent_with(score: float, interval: tuple[float, float], confidence: float) -> str:
    low, high = interval
    level = f"{confidence * 100:g}% CI"
    return f"{format_number(score)}% ({level} {format_number(low)}–{format_number(high)})"


SCOPE_COLUMNS = ("Samples", "Baseline", "Candidate", "Difference", "Interval", "p", "Holm p")
"""The columns of the Markdown and HTML tables per tag and strategy, between the name and the
verdict."""


def scope_figures(comparison: Comparison) -> list[str]:
    """The samples, the two scores, the difference and its interval of a tag or strategy, as
    the first five :data:`SCOPE_COLUMNS` show them."""
    low, high = comparison.interval
    return [
        str(comparison.samples),
        f"{format_number(comparison.baseline_score)}%",
        f"{format_number(comparison.candidate_score)}%",
        signed(comparison.difference),
        f"{signed(low)} to {signed(high)}",
    ]


def scope_verdict(comparison: Comparison, margin: float) -> str:
    """The verdict, with ``(regression)`` when it is one beyond ``margin``."""
    if comparison.is_significant_regression(margin):
        return "worse (regression)"
    return comparison.verdict


def print_comparison(
    comparison: Comparison, *, console: Console | None = None, margin: float = 0.0
) -> None:
    """Print the overview, the tables per tag and strategy, and the changed pairs."""
    console = console if console is not None else terminal_console()
    overview = Table(
        title="Comparison (candidate − baseline)",
        box=box.SIMPLE,
        show_header=False,
        title_justify="left",
    )
    overview.add_column("what", style="bold", no_wrap=True)
    overview.add_column("value", overflow="fold")
    c = comparison
    low, high = c.interval
    level = f"{c.confidence * 100:g}% CI"
    rows = [
        ("baseline", c.baseline_label),
        ("candidate", c.candidate_label),
        (
            "aligned",
            f"{c.samples} samples, {c.pairs} (sample, strategy) pairs; "
            f"{len(c.only_in_baseline)} only in the baseline, "
            f"{len(c.only_in_candidate)} only in the candidate",
        ),
        ("baseline score", _percent_with(c.baseline_score, c.baseline_interval, c.confidence)),
        ("candidate score", _percent_with(c.candidate_score, c.candidate_interval, c.confidence)),
        ("difference", f"{signed(c.difference)} points ({level} {signed(low)} to {signed(high)})"),
        ("p-value", f"{format_p(c.p_value)} ({c.test})"),
        ("changed", f"{len(c.regressions)} regressions, {len(c.fixes)} fixes"),
        ("power", c.power_note),
        ("verdict", scope_verdict(c, margin)),
    ]
    for key, value in rows:
        overview.add_row(plain(key), plain(value))
    print_table(console, overview)
    _scopes(console, "Per tag", "tag", c.tag_comparisons, margin)
    _scopes(console, "Per strategy", "strategy", c.strategy_comparisons, margin)
    _pairs(console, "Regressions (passed → not passed)", c.regressions)
    _pairs(console, "Fixes (not passed → passed)", c.fixes)
    _pairs(console, "New errors", c.new_errors, with_reason=True)
    _pairs(console, "Newly unscored", c.newly_unscored, with_reason=True)
    _only(console, "baseline", c.only_in_baseline)
    _only(console, "candidate", c.only_in_candidate)
    for warning in c.warnings:
        print_line(console, f"warning: {warning}")


def _scopes(
    console: Console,
    title: str,
    kind: str,
    scopes: Mapping[str, Comparison],
    margin: float,
) -> None:
    if not scopes:
        return
    first = next(iter(scopes.values()))
    level = f"{first.confidence * 100:g}% CI"
    table = Table(title=f"{title} (p Holm-adjusted)", box=box.SIMPLE, title_justify="left")
    table.add_column(kind, overflow="fold", min_width=6)
    table.add_column("samples", justify="right", no_wrap=True)
    table.add_column("baseline → candidate", justify="right", no_wrap=True)
    table.add_column(f"difference ({level})", justify="right", no_wrap=True)
    table.add_column("p", justify="right", no_wrap=True)
    table.add_column("verdict", overflow="fold", min_width=10)
    for name, s in scopes.items():
        low, high = s.interval
        table.add_row(
            plain(name),
            str(s.samples),
            f"{format_number(s.baseline_score)}% → {format_number(s.candidate_score)}%",
            f"{signed(s.difference)} ({signed(low)}…{signed(high)})",
            _p(s.adjusted_p_value),
            plain(scope_verdict(s, margin)),
        )
    print_table(console, table)


def _p(p: float) -> str:
    return format_p(p).removeprefix("p = ").removeprefix("p ")


def _pairs(
    console: Console, title: str, pairs: Sequence[ChangedPair], *, with_reason: bool = False
) -> None:
    if not pairs:
        return
    table = Table(title=f"{title}: {len(pairs)}", box=box.SIMPLE, title_justify="left")
    columns = ["sample", "strategy", "baseline", "candidate", "baseline output", "candidate output"]
    if with_reason:
        columns.append("candidate reason")
    for column in columns:
        if column in ("strategy", "baseline", "candidate"):
            table.add_column(column, no_wrap=True)
        else:
            table.add_column(column, overflow="fold")
    for pair in pairs[:_PAIRS_SHOWN]:
        cells = [
            pair.sample,
            pair.strategy or "(function)",
            pair.verdict_on("baseline"),
            pair.verdict_on("candidate"),
            truncate(display_value(pair.baseline_output), _OUTPUT_LENGTH),
            truncate(display_value(pair.candidate_output), _OUTPUT_LENGTH),
        ]
        if with_reason:
            cells.append(truncate(pair.candidate[0].explanation or "", _OUTPUT_LENGTH))
        table.add_row(*(plain(cell) for cell in cells))
    print_table(console, table)
    if len(pairs) > _PAIRS_SHOWN:
        print_line(console, f"... and {len(pairs) - _PAIRS_SHOWN} more (see --format html or json)")


def _only(console: Console, side: str, keys: Sequence[PairKey]) -> None:
    if not keys:
        return
    shown = ", ".join(str(key) for key in keys[:_PAIRS_SHOWN])
    more = f" and {len(keys) - _PAIRS_SHOWN} more" if len(keys) > _PAIRS_SHOWN else ""
    print_line(console, f"Only in the {side} ({len(keys)}, not compared): {shown}{more}")


def text_of(comparison: Comparison, *, margin: float = 0.0) -> str:
    """The terminal output as plain text (no colours), 120 columns wide."""
    console = Console(
        record=True, width=_TEXT_WIDTH, color_system=None, file=io.StringIO(), highlight=False
    )
    print_comparison(comparison, console=console, margin=margin)
    return console.export_text()
