"""The comparison as Markdown (``comparison.md``): a pull-request comment or a CI summary.

Every value from a run (names, tags, outputs, labels) goes through the Markdown escaping of
the report (``formatters/_escape.py``), so none can break a table or inject HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._compare._align import PairKey
from .._compare._comparison import ChangedPair, Comparison, format_p, signed
from .._display import display_value
from .._util._numbers import format_number, truncate
from ._comparison_terminal import SCOPE_COLUMNS, scope_figures, scope_verdict
from ._escape import markdown_inline, markdown_row

__all__ = ["render_markdown"]

_OUTPUT_LENGTH = 300
_PAIRS_SHOWN = 100


def _score(score: float, interval: tuple[float, float], confidence: float) -> str:
    low, high = interval
    return (
        f"{format_number(score)}% ({confidence * 100:g}% CI {format_number(low)}–"
        f"{format_number(high)})"
    )


def render_markdown(comparison: Comparison, *, margin: float = 0.0) -> str:
    """The comparison as a Markdown document."""
    c = comparison
    low, high = c.interval
    level = f"{c.confidence * 100:g}% CI"
    lines = [
        "# Comparison",
        "",
        f"**Verdict**: {scope_verdict(c, margin)}",
        "",
        f"- **Baseline**: {markdown_inline(c.baseline_label)}: "
        f"{_score(c.baseline_score, c.baseline_interval, c.confidence)}",
        f"- **Candidate**: {markdown_inline(c.candidate_label)}: "
        f"{_score(c.candidate_score, c.candidate_interval, c.confidence)}",
        f"- **Difference**: {signed(c.difference)} points ({level} {signed(low)} to "
        f"{signed(high)})",
        f"- **p-value**: {format_p(c.p_value)} ({c.test})",
        f"- **Aligned**: {c.samples} samples, {c.pairs} (sample, strategy) pairs; "
        f"{len(c.only_in_baseline)} only in the baseline, {len(c.only_in_candidate)} only in "
        "the candidate",
        f"- **Changed**: {len(c.regressions)} regressions, {len(c.fixes)} fixes, "
        f"{len(c.new_errors)} new errors, {len(c.newly_unscored)} newly unscored",
        f"- **Power**: {c.power_note}",
        "",
    ]
    for warning in c.warnings:
        lines += [f"> **Warning**: {markdown_inline(warning)}", ""]
    lines += _scopes("Per tag", "Tag", c.tag_comparisons, margin)
    lines += _scopes("Per strategy", "Strategy", c.strategy_comparisons, margin)
    lines += _pairs("Regressions (passed → not passed)", c.regressions)
    lines += _pairs("Fixes (not passed → passed)", c.fixes)
    lines += _pairs("New errors", c.new_errors, with_reason=True)
    lines += _pairs("Newly unscored", c.newly_unscored, with_reason=True)
    lines += _only("baseline", c.only_in_baseline)
    lines += _only("candidate", c.only_in_candidate)
    return "\n".join(lines).rstrip("\n") + "\n"


def _scopes(title: str, kind: str, scopes: Mapping[str, Comparison], margin: float) -> list[str]:
    if not scopes:
        return []
    lines = [
        f"## {title}",
        "",
        markdown_row(kind, *SCOPE_COLUMNS, "Verdict"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, s in scopes.items():
        lines.append(
            markdown_row(
                markdown_inline(name),
                *scope_figures(s),
                format_p(s.p_value).removeprefix("p = ").removeprefix("p "),
                format_p(s.adjusted_p_value).removeprefix("p = ").removeprefix("p "),
                scope_verdict(s, margin),
            )
        )
    return [*lines, ""]


def _pairs(title: str, pairs: Sequence[ChangedPair], *, with_reason: bool = False) -> list[str]:
    if not pairs:
        return []
    headers = ["Sample", "Strategy", "Baseline", "Candidate", "Baseline output", "Candidate output"]
    if with_reason:
        headers.append("Candidate reason")
    lines = [
        f"## {title}: {len(pairs)}",
        "",
        markdown_row(*headers),
        "|" + "---|" * len(headers),
    ]
    for pair in pairs[:_PAIRS_SHOWN]:
        cells = [
            markdown_inline(pair.sample),
            markdown_inline(pair.strategy or "(function)"),
            pair.verdict_on("baseline"),
            pair.verdict_on("candidate"),
            _output(pair.baseline_output),
            _output(pair.candidate_output),
        ]
        if with_reason:
            cells.append(markdown_inline(truncate(pair.candidate[0].explanation or "", 300)))
        lines.append(markdown_row(*cells))
    if len(pairs) > _PAIRS_SHOWN:
        lines += ["", f"… and {len(pairs) - _PAIRS_SHOWN} more (see the JSON or HTML output)."]
    return [*lines, ""]


def _output(value: object) -> str:
    return markdown_inline(truncate(display_value(value), _OUTPUT_LENGTH)) or "(empty)"


def _only(side: str, keys: Sequence[PairKey]) -> list[str]:
    if not keys:
        return []
    lines = [f"## Only in the {side}: {len(keys)} (not compared)", ""]
    lines += [f"- {markdown_inline(str(key), line_start=True)}" for key in keys[:_PAIRS_SHOWN]]
    if len(keys) > _PAIRS_SHOWN:
        lines.append(f"- … and {len(keys) - _PAIRS_SHOWN} more")
    return [*lines, ""]
