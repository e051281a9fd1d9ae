"""The argument parser of the ``aeval`` command."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .._engine._shards import Shard
from ..formatters._registry import FormatChoices
from ._agents import add_rescore_command, tools_option
from ._arguments import add_output_options, add_store_options, kappa_value, parsed, percent, seconds
from ._compare import add_compare_command, add_gate_options
from ._config import ErrorLimit

__all__ = ["ELSEWHERE", "MAX_CONCURRENCY", "MAX_LAST", "MAX_REPEATS", "MAX_WORKERS", "build_parser"]

ELSEWHERE = {
    "calibrate": "a judge's stored verdicts against the reviewers' labels (kappa, no model call)",
    "dataset": "turn the failed rows of a stored run into samples (aeval dataset from REF)",
    "view": "browse and review the stored runs in a local web app (aeval-engine[view])",
}
"""The subcommands declared in their own modules, each with its line in ``aeval --help``: a
run of another subcommand does not import them (it lists them, without their options)."""

MAX_CONCURRENCY = 100_000
MAX_REPEATS = 10_000
MAX_WORKERS = 10_000
MAX_LAST = 1_000_000


def _positive_int(text: str, maximum: int = MAX_LAST) -> int:
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        value = int(text) if len(text.strip()) <= 20 else maximum + 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {shown!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {shown!r}")
    if value > maximum:
        raise argparse.ArgumentTypeError(
            f"expected an integer from 1 to {maximum:,}, got {shown!r}"
        )
    return value


def _at_most(maximum: int) -> Callable[[str], int]:
    return partial(_positive_int, maximum=maximum)


_error_limit = parsed(ErrorLimit.parse)
_shard = parsed(Shard.parse)


def _add_thresholds(parser: argparse.ArgumentParser, *, errors: str, kappa: bool = False) -> None:
    """``--min-score``, ``--min-kappa`` (with ``kappa``) and ``--max-errors`` (its help
    ``errors``): the thresholds of ``aeval run`` and ``aeval merge``."""
    parser.add_argument("--min-score", type=percent, metavar="PERCENT", help="global minimum")
    if kappa:
        parser.add_argument(
            "--min-kappa",
            type=kappa_value,
            metavar="KAPPA",
            help="least Cohen's kappa of each strategy against the samples' human labels",
        )
    parser.add_argument("--max-errors", type=_error_limit, metavar="N|PERCENT%", help=errors)


def _declare_elsewhere(commands: Any, name: str, command: str | None) -> None:
    """Declare the subcommand ``name`` in full when ``command`` is it or ``None``, else only
    its line in the list of subcommands."""
    if command is not None and command != name:
        commands.add_parser(name, help=ELSEWHERE[name])
    elif name == "calibrate":
        from ._calibrate import add_calibrate_command

        add_calibrate_command(commands)
    elif name == "dataset":
        from ._dataset import add_dataset_command

        add_dataset_command(commands)
    else:
        from ._view import add_view_command

        add_view_command(commands)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``aeval`` parser; with ``command`` (the subcommand about to run), the subcommands
    of :data:`ELSEWHERE` other than it are declared without importing their modules."""
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="aeval",
        description="Evaluate an LLM application over samples: batch runs and CI gates.",
    )
    parser.add_argument("--version", action="version", version=f"aeval {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="evaluate the target of a configuration file",
        description="Evaluate the target of CONFIG and gate on its thresholds. Exit codes: "
        "0 thresholds met, 1 a threshold missed or no row could be scored, 2 configuration or "
        "usage error, 3 an error stopped the run, 4 the baseline could not be compared, 129 "
        "stopped by SIGHUP, 130 interrupted (Ctrl-C), 143 stopped by SIGTERM.",
    )
    run.add_argument("config", metavar="CONFIG", help="the configuration file (YAML)")
    run.add_argument(
        "--concurrency", type=_at_most(MAX_CONCURRENCY), help="samples evaluated at once"
    )
    run.add_argument(
        "--tags",
        action="append",
        metavar="TAG[,TAG]",
        help="evaluate only samples carrying one of these tags (repeatable)",
    )
    _add_thresholds(
        run,
        kappa=True,
        errors="most error rows the run may have: a count (0: none) or a percentage of the "
        "rows (5%%)",
    )
    add_output_options(run)
    run.add_argument("--timeout", type=seconds, metavar="SECONDS", help="per sample")
    run.add_argument("--repeats", type=_at_most(MAX_REPEATS), help="runs per sample")
    run.add_argument(
        "--keep",
        choices=("all", "failures", "none"),
        help="rows the report holds (default: all; failures for streamed JSONL sources); "
        "rows.jsonl always has every row",
    )
    run.add_argument(
        "--quiet", action="store_true", help="no progress and no tables: the verdict only"
    )
    run.add_argument(
        "--baseline",
        metavar="REF",
        help="compare the run with a baseline at the end: a run's rows.jsonl or report.json, "
        "or a stored run (run id, latest, latest~1, NAME@latest)",
    )
    add_gate_options(run)
    add_store_options(
        run,
        run="the run",
        name="the run's name in the run store (default: the config's)",
        store="the run store to record the run in (default: AEVAL_STORE, the config's store:, "
        "or .aeval/runs.sqlite)",
    )
    run.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where samples run: in this process (local, the default) or on Ray workers "
        "(needs aeval-engine[ray])",
    )
    run.add_argument(
        "--workers",
        type=_at_most(MAX_WORKERS),
        help="Ray workers (default 2), each at --concurrency",
    )
    run.add_argument(
        "--address",
        metavar="ADDRESS",
        help="the Ray cluster (e.g. auto, ray://head:10001); default: a local Ray instance",
    )
    run.add_argument(
        "--tools",
        type=tools_option,
        metavar="live|fixtures|replay:REF",
        help="where @aeval.tool functions get their results: live (call them, the default), "
        "fixtures (each sample's tools: fixtures) or replay:REF (the results recorded in a "
        "stored run, a rows.jsonl or a report.json); overrides the config's tools:",
    )
    run.add_argument(
        "--shard",
        type=_shard,
        metavar="I/N",
        help="evaluate only shard I of N (the same split on every machine); "
        "aeval merge joins the shards' outputs",
    )

    add_rescore_command(commands)
    merge = commands.add_parser(
        "merge",
        help="merge the outputs of `aeval run --shard I/N` into one report",
        description="Merge the rows.jsonl of the shards of one run (files, or directories "
        "searched for rows.jsonl) into one report in every format, and gate on the "
        "thresholds as aeval run does. Exit codes: 0 thresholds met, 1 a threshold missed, 2 "
        "the shards cannot be merged (different configurations or datasets, a shard twice) "
        "or a usage error, 3 the report is partial (a shard missing or stopped).",
    )
    merge.add_argument("paths", nargs="+", type=Path, metavar="DIR_OR_FILE")
    merge.add_argument(
        "--config",
        type=Path,
        metavar="CONFIG",
        help="the configuration the shards ran: its thresholds, output and formats",
    )
    _add_thresholds(
        merge, errors="most error rows the merged run may have: a count or a percentage (5%%)"
    )
    add_output_options(merge)
    merge.add_argument("--quiet", action="store_true", help="no tables: the verdict only")
    add_store_options(
        merge,
        run="the merged run",
        name="the merged run's name in the run store (default: the config's, else the "
        "shards' stored runs')",
        store="the run store to record the merged run in (default: AEVAL_STORE, the config's "
        "store:, or .aeval/runs.sqlite)",
    )

    report = commands.add_parser(
        "report",
        help="render a run (rows.jsonl or report.json) in any format",
        description="Re-render a finished or partial run from its rows.jsonl (every row, with "
        "the run's header) or from its report.json.",
    )
    report.add_argument("rows", type=Path, metavar="RUN.jsonl|report.json")
    report.add_argument("--format", default="markdown", help="markdown, json, junit, html, ...")
    report.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE instead of stdout"
    )

    add_compare_command(commands)
    _declare_elsewhere(commands, "calibrate", command)
    _declare_elsewhere(commands, "dataset", command)
    runs = commands.add_parser(
        "runs",
        help="list the runs in the run store",
        description="List the runs recorded in the run store, oldest first: id, name, start, "
        "commit (* when the tree was dirty), score with its 95%% interval, samples, rows, and "
        "whether the run was partial.",
    )
    runs.add_argument("name", nargs="?", metavar="NAME", help="only the runs of this name")
    runs.add_argument(
        "--last", type=_positive_int, default=20, metavar="N", help="the last N runs (20)"
    )
    runs.add_argument("--format", choices=("table", "json"), default="table")
    runs.add_argument("--store", type=Path, metavar="PATH", help="the run store to read")
    runs.add_argument(
        "--shards",
        action="store_true",
        help="also list the runs of single shards (aeval run --shard), left out by default",
    )

    history = commands.add_parser(
        "history",
        help="the pass rate of a run name over time",
        description="The pass rate of each run of NAME, oldest first, with its 95%% interval: "
        "overall, or over the rows of one tag or one strategy.",
    )
    history.add_argument("name", metavar="NAME", help="the runs' name (aeval runs lists them)")
    which = history.add_mutually_exclusive_group()
    which.add_argument("--tag", help="only the rows of samples with this tag")
    which.add_argument("--strategy", help="only the rows of this strategy")
    history.add_argument(
        "--since", metavar="WHEN", help="runs started since: 2026-11-01, 2026-11-01T09:00, 7d"
    )
    history.add_argument("--last", type=_positive_int, metavar="N", help="the last N runs")
    history.add_argument("--format", choices=FormatChoices("history", "table"), default="table")
    history.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE instead of stdout"
    )
    history.add_argument("--store", type=Path, metavar="PATH", help="the run store to read")
    history.add_argument(
        "--shards",
        action="store_true",
        help="also show the runs of single shards (aeval run --shard), left out by default",
    )

    _declare_elsewhere(commands, "view", command)
    commands.add_parser("schema", help="print the JSON Schema of the configuration file")
    return parser
