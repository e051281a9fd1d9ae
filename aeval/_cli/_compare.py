"""``aeval compare BASE CAND``, and the comparison that ends ``aeval run --baseline REF``.

A side is a file (a run's ``rows.jsonl`` or ``report.json``) when that file exists; anything
else is a stored run's ref (a run id, ``latest``, ``latest~1``, ``NAME@latest``) read from the
run store: ``--store PATH``, else ``$AEVAL_STORE``, else ``.aeval/runs.sqlite``
(``aeval._compare._refs``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .._display import printable
from .._util._files import write_atomic
from .._util._jsonsafe import safe_text
from ..formatters._registry import (
    FormatChoices,
    formatter_for_path,
    get_formatter,
    render,
    supported_formats,
)
from ..formatters._terminal import print_line, terminal_console
from ._arguments import confidence, points

if TYPE_CHECKING:
    from rich.console import Console

    from .._compare import Comparison, Gate, LoadedSide
    from .._reporting._report import EvaluationReport

__all__ = [
    "DEFAULT_STORE",
    "STORE_ENV",
    "add_compare_command",
    "add_gate_options",
    "compare_run",
    "gate_from",
    "gate_line",
    "run_compare",
]

# aeval._compare's, spelled here so that declaring the commands does not import the comparison
# (aeval run does not compare unless given --baseline); tests/test_cli_startup.py checks both
DEFAULT_STORE = Path(".aeval", "runs.sqlite")
STORE_ENV = "AEVAL_STORE"


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """The options ``aeval compare`` and ``aeval run --baseline`` share."""
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when the candidate is significantly worse than the baseline (overall or "
        "on a tag, Holm-adjusted) by more than --margin points",
    )
    parser.add_argument(
        "--margin",
        type=points,
        default=0.0,
        metavar="PP",
        help="percentage points a significant regression must exceed to fail (default 0)",
    )
    parser.add_argument(
        "--require-non-inferiority",
        type=points,
        metavar="MARGIN",
        help="exit 1 unless the low end of the difference's interval is above -MARGIN points",
    )
    parser.add_argument(
        "--confidence",
        type=confidence,
        default=0.95,
        help="confidence of the intervals and of 'significant' (default 0.95)",
    )


def add_compare_command(commands: Any) -> None:
    """Declare ``aeval compare`` on the command's subparsers."""
    compare = commands.add_parser(
        "compare",
        help="compare a candidate run with a baseline run (paired, with a verdict)",
        description="Compare CANDIDATE with BASELINE: each a run's rows.jsonl or report.json, "
        "or a stored run (a run id, latest, latest~1, NAME@latest). Exit codes: 0 no gate "
        "failed, 1 a gate failed, 2 bad input.",
    )
    compare.add_argument("baseline", metavar="BASELINE", help="what is shipped today")
    compare.add_argument("candidate", metavar="CANDIDATE", help="the change under test")
    add_gate_options(compare)
    compare.add_argument(
        "--format",
        choices=FormatChoices("comparison", "terminal"),
        help="terminal (tables, the default), text, markdown, json, html or junit",
    )
    compare.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the comparison to FILE (format from --format or the extension); the "
        "tables still print",
    )
    compare.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help=f"the run store for refs (default ${STORE_ENV}, else {DEFAULT_STORE})",
    )


def gate_from(args: argparse.Namespace) -> Gate:
    """The gate the options ask for."""
    from .._compare import Gate

    return Gate(
        fail_on_regression=bool(args.fail_on_regression),
        margin=float(args.margin),
        non_inferiority=args.require_non_inferiority,
    )


def gate_line(gate: Gate, comparison: Comparison) -> tuple[str, bool]:
    """The verdict line and whether a gate failed."""
    failures = gate.failures(comparison)
    if failures:
        return "FAILED: " + "; ".join(failures), True
    if gate.active:
        return "PASSED: " + "; ".join(gate.passes(comparison)), False
    return (
        f"DONE: {comparison.verdict}; no gate set (--fail-on-regression, "
        "--require-non-inferiority)",
        False,
    )


async def _compare(args: argparse.Namespace) -> Comparison:
    from .._compare import compare_loaded, load_ref, store_path

    store = store_path(args.store)
    baseline = await load_ref(args.baseline, role="baseline", store=store)
    candidate = await load_ref(args.candidate, role="candidate", store=store)
    return compare_loaded(baseline, candidate, confidence=args.confidence)


def run_compare(args: argparse.Namespace) -> int:
    """Run ``aeval compare``; returns 0 (no gate failed) or 1 (a gate failed).

    Raises:
        ComparisonError, FormatError: Bad input (the caller exits 2).
    """
    gate = gate_from(args)
    fmt: str | None = args.format
    output: Path | None = args.output
    if output is not None:
        fmt = (
            "text"
            if fmt == "terminal"
            else fmt or formatter_for_path(output, subject="comparison").name
        )
    comparison = anyio.run(_compare, args)
    line, failed = gate_line(gate, comparison)
    rendered = None
    if fmt not in (None, "terminal"):
        rendered = render(
            "comparison", fmt, comparison, margin=gate.margin, non_inferiority=gate.non_inferiority
        )
    if rendered is not None and output is None:
        sys.stdout.write(safe_text(rendered))
        sys.stderr.write(f"aeval: {printable(line)}\n")
        return 1 if failed else 0
    console = terminal_console()
    comparison.print(console, margin=gate.margin)
    if rendered is not None and output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(output, rendered)
        print_line(console, f"Comparison written to {output}")
    print_line(console, line)
    return 1 if failed else 0


async def _candidate(report: EvaluationReport, rows: Path, output_dir: Path) -> LoadedSide:
    from .._compare import load_side

    if report.holds_all_rows:
        return await load_side(report, role="candidate", label=f"this run ({output_dir})")
    return await load_side(rows, role="candidate")


def compare_run(
    console: Console,
    baseline: LoadedSide,
    report: EvaluationReport,
    *,
    rows: Path,
    output_dir: Path,
    formats: tuple[str, ...],
    gate: Gate,
    confidence: float,
    quiet: bool,
) -> tuple[str, bool]:
    """Compare a finished run with its baseline: print it, write ``comparison.<ext>`` for each
    of the run's formats that a comparison has.

    The report is the candidate when it holds every row, else the run's ``rows.jsonl``.

    Returns:
        The gate's line (``BASELINE PASSED: ...``) and whether a gate failed.
    """
    from .._compare import compare_loaded

    candidate = anyio.run(_candidate, report, rows, output_dir)
    comparison = compare_loaded(baseline, candidate, confidence=confidence)
    if not quiet:
        comparison.print(console, margin=gate.margin)
    written = []
    for name in dict.fromkeys(formats):
        if name == "text" or name not in supported_formats("comparison"):
            continue
        path = output_dir / f"comparison{get_formatter(name, subject='comparison').extension}"
        text = render(
            "comparison", name, comparison, margin=gate.margin, non_inferiority=gate.non_inferiority
        )
        write_atomic(path, text)
        written.append(path)
    if written and not quiet:
        print_line(console, "Comparison written to:")
        for path in written:
            print_line(console, f"  {path}")
    line, failed = gate_line(gate, comparison)
    return f"BASELINE {line}", failed
