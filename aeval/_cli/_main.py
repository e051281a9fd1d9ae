"""The ``aeval`` command: ``run``, ``merge``, ``report``, ``runs``, ``history``, ``compare`` and
``schema``.

Exit codes: 0 every threshold (and gate) met, 1 a threshold or a comparison's gate missed (or
no row could be scored), 2 a configuration or usage error (the message, on stderr, names the
file and the key, or the side of a comparison; nothing was evaluated), 3 an error stopped the
run (the report is partial), 4 the run met its thresholds but its ``--baseline`` could not be
compared with it, 129 stopped by SIGHUP, 130 interrupted by Ctrl-C (or a target raising
``KeyboardInterrupt``), 141 the reader of stdout left, 143 stopped by SIGTERM. The first signal
decides: later ones are ignored until the command ends.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from .._compare import load_ref, store_path
from .._display import printable
from .._engine._progress import NullProgress, PlainProgress, RichProgress, RunProgress
from .._engine._shards import Shard
from .._exceptions import (
    ComparisonError,
    ExecutorError,
    FormatError,
    MergeError,
    MissingExtraError,
    ReportWriteError,
    SampleLoadError,
    StoreError,
)
from .._reporting._codec import read_run
from .._reporting._report import EvaluationReport
from .._reporting._run_info import Gate
from .._util._jsonsafe import safe_text
from ..formatters._registry import FormatChoices
from ..formatters._report_terminal import print_run_summary
from ..formatters._terminal import print_line, terminal_console
from ..trace import Replay
from ._agents import add_rescore_command, rescore_command, scorer_tools, tools_option
from ._build import build_strategies, import_object, import_paths
from ._compare import add_compare_command, add_gate_options, compare_run, gate_from, run_compare
from ._config import ConfigError, ErrorLimit, RunConfig, load_config
from ._history import (
    UsageError,
    config_error,
    history_command,
    read_store_path,
    run_store_path,
    runs_command,
)
from ._process import exit_past, lingering_threads
from ._run import ROWS_FILE, execute, signals_kept
from ._scale import (
    add_merge_store_options,
    check_config,
    gate_config,
    merge_files,
    merge_inputs,
    save_merged,
)
from ._schema import schema_text
from ._summary import check_thresholds, gate_of, verdict

__all__ = [
    "EXIT_BASELINE",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUN_ERROR",
    "EXIT_TERMINATED",
    "main",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_RUN_ERROR = 3
EXIT_BASELINE = 4
EXIT_HANGUP = 129
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
_STOP_CODES = {"SIGHUP": EXIT_HANGUP, "SIGTERM": EXIT_TERMINATED}
"""The exit code of a run stopped by a signal (128 + its number); SIGINT and a target's
``KeyboardInterrupt`` give ``EXIT_INTERRUPTED``."""
_INTERRUPTIONS = ("SIGINT", "KeyboardInterrupt")


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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got {text!r}")
    return value


def _kappa(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a kappa, got {text!r}") from None
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a kappa from -1 to 1, got {text!r}")
    return value


def _error_limit(text: str) -> ErrorLimit:
    try:
        return ErrorLimit.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
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
    run.add_argument("--min-score", type=_percent, metavar="PERCENT", help="global minimum")
    run.add_argument(
        "--min-kappa",
        type=_kappa,
        metavar="KAPPA",
        help="least Cohen's kappa of each strategy against the samples' human labels",
    )
    run.add_argument(
        "--max-errors",
        type=_error_limit,
        metavar="N|PERCENT%",
        help="most error rows the run may have: a count (0: none) or a percentage of the "
        "rows (5%%)",
    )
    run.add_argument("--output", type=Path, metavar="DIR", help="the output directory")
    run.add_argument(
        "--format",
        action="append",
        dest="formats",
        metavar="FORMAT",
        help="a report format (repeatable; replaces the configured formats)",
    )
    run.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="per sample")
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
    run.add_argument("--name", help="the run's name in the run store (default: the config's)")
    run.add_argument(
        "--label",
        action="append",
        dest="labels",
        metavar="LABEL",
        help="a label kept with the run in the store (repeatable; added to the config's)",
    )
    recording = run.add_mutually_exclusive_group()
    recording.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="the run store to record the run in (default: AEVAL_STORE, the config's store:, "
        "or .aeval/runs.sqlite)",
    )
    recording.add_argument(
        "--no-store", action="store_true", help="do not record the run in the run store"
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
    merge.add_argument("--min-score", type=_percent, metavar="PERCENT", help="global minimum")
    merge.add_argument(
        "--max-errors",
        type=_error_limit,
        metavar="N|PERCENT%",
        help="most error rows the merged run may have: a count or a percentage (5%%)",
    )
    merge.add_argument("--output", type=Path, metavar="DIR", help="the output directory")
    merge.add_argument(
        "--format",
        action="append",
        dest="formats",
        metavar="FORMAT",
        help="a report format (repeatable; replaces the configured formats)",
    )
    merge.add_argument("--quiet", action="store_true", help="no tables: the verdict only")
    add_merge_store_options(merge)

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

    commands.add_parser("schema", help="print the JSON Schema of the configuration file")
    return parser


def _overrides(config: RunConfig, args: argparse.Namespace) -> RunConfig:
    changes: dict[str, Any] = {}
    if args.concurrency is not None:
        changes["concurrency"] = args.concurrency
    if args.tags:
        tags = [tag.strip() for group in args.tags for tag in group.split(",")]
        changes["tags"] = tuple(tag for tag in tags if tag)
    if args.min_score is not None:
        changes["min_score"] = args.min_score
    if args.min_kappa is not None:
        changes["min_kappa"] = args.min_kappa
    if args.max_errors is not None:
        changes["max_errors"] = args.max_errors
    if args.output is not None:
        changes["output_dir"] = args.output
    if args.formats:
        changes["formats"] = tuple(args.formats)
    if args.timeout is not None:
        changes["timeout"] = args.timeout
    if args.repeats is not None:
        changes["repeats"] = args.repeats
    if args.name is not None:
        changes["name"] = args.name
    if args.labels:
        changes["labels"] = tuple(dict.fromkeys((*config.labels, *args.labels)))
    if args.tools is not None:
        changes["tools"] = args.tools
    return config.replace(**changes) if changes else config


def _check_formats(config: RunConfig, *, from_flag: bool) -> None:
    from ..formatters import get_formatter, supported_formats

    for index, name in enumerate(config.formats):
        try:
            get_formatter(name)
        except FormatError:
            import difflib

            known = supported_formats()
            close = difflib.get_close_matches(name.lower(), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            message = f"unknown format {name!r}{hint}; available: {', '.join(known)}"
            if from_flag:
                raise ConfigError.at(config.path, "--format", message) from None
            raise config.error(("output", "formats", index), message) from None


def _progress(console: Console, quiet: bool, strategies: int) -> RunProgress:
    if quiet:
        return NullProgress(strategies)
    if console.is_terminal:
        return RichProgress(console, strategies)
    return PlainProgress(sys.stdout, strategies)


def _executor(args: argparse.Namespace, config: RunConfig) -> Any:
    """The Ray executor of ``--executor ray``, with Ray started (``None`` for local runs)."""
    if args.executor != "ray":
        if args.workers is not None or args.address is not None:
            raise ConfigError.at(
                config.path, "--workers", "--workers and --address need --executor ray"
            )
        return None
    from ..ray import RayExecutor

    executor = RayExecutor(
        workers=args.workers or 2,
        address=args.address,
        python_path=import_paths(config),
    )
    executor.start()
    return executor


def _run(args: argparse.Namespace) -> int:
    with signals_kept():
        return _run_kept(args)


def _run_kept(args: argparse.Namespace) -> int:
    config = _overrides(load_config(args.config), args)
    _check_formats(config, from_flag=bool(args.formats))
    function = None
    if isinstance(config.target, str):
        function = import_object(config, ("target",), config.target)
        if not callable(function):
            raise config.error(("target",), f"{config.target!r} is not callable")
    store = None
    path = run_store_path(config, flag=args.store, disabled=args.no_store)
    if path is not None:
        from .._store import RunStore

        store = RunStore(path).sink(
            config.run_name, labels=config.labels, config=config.path.read_bytes()
        )
    built = build_strategies(config)
    tools = scorer_tools(config, path)
    if isinstance(tools, Replay):
        anyio.run(tools.load)
    gate = gate_from(args)
    baseline = None
    if args.baseline is not None:
        lookup = path if path is not None else store_path(None)
        baseline = anyio.run(partial(load_ref, args.baseline, role="baseline", store=lookup))
    elif gate.active:
        return _error(
            "--fail-on-regression and --require-non-inferiority compare the run with a "
            "baseline: give it with --baseline REF (a rows.jsonl, a report.json or a stored run)"
        )
    executor = _executor(args, config)
    console = terminal_console()

    def decide(report: EvaluationReport, errors: Mapping[str, int], finished: bool) -> Gate:
        checks = check_thresholds(report, config, errors=errors)
        # a shard holds part of the samples: aeval merge checks the thresholds
        return gate_of(checks, checked=finished and args.shard is None)

    progress = _progress(console, args.quiet, len(built.strategies))
    try:
        result = anyio.run(
            partial(
                execute,
                config,
                built,
                function,
                progress,
                keep=args.keep,
                store=store,
                shard=args.shard,
                executor=executor,
                gate=decide,
                tools=tools,
            )
        )
    except StoreError as exc:
        raise config_error(config, exc) from exc
    finally:
        if executor is not None:
            executor.close()
    stored = None
    if result.run_id is not None and path is not None:
        stored = f"{result.run_id} (in {_shown_path(path)})"
    stopped = result.interrupted is not None or result.error is not None
    # a shard holds part of the samples: its thresholds are checked on the merged report
    checks = (
        []
        if args.shard is not None
        else check_thresholds(result.report, config, errors=result.error_types)
    )
    if not args.quiet:
        print_run_summary(
            console,
            result.report,
            config=config.path,
            checks=checks,
            files=result.files,
            interrupted=stopped,
            stored=stored,
        )
    if result.error is not None:
        _error(f"the run stopped: {type(result.error).__name__}: {result.error}")
    label = None
    if result.interrupted is not None:
        label = "INTERRUPTED" if result.interrupted in _INTERRUPTIONS else "TERMINATED"
    elif result.error is not None:
        label = "STOPPED"
    regressed, baseline_line, baseline_problem = False, None, None
    if baseline is not None and label is not None:
        baseline_line = "BASELINE NOT COMPARED: the run stopped before its last sample"
    elif baseline is not None:
        try:
            baseline_line, regressed = compare_run(
                console,
                baseline,
                result.report,
                rows=result.files[-1],
                output_dir=config.output_dir,
                formats=config.formats,
                gate=gate,
                confidence=args.confidence,
                quiet=args.quiet,
            )
        except (ComparisonError, FormatError, StoreError, OSError) as exc:
            baseline_problem = str(exc) or type(exc).__name__
            baseline_line = (
                "BASELINE NOT COMPARED: the run was evaluated (its verdict is above), but its "
                "baseline cannot be compared with it"
            )
    line = verdict(checks, stopped=label, report=result.report)
    if args.shard is not None and label is None:
        line = (
            f"DONE: shard {args.shard}, {result.report.sample_count} of "
            f"{result.report.run.dataset_samples} samples; the thresholds are checked by "
            "`aeval merge` on the merged report"
        )
    print_line(console, line)
    if baseline_line is not None:
        print_line(console, baseline_line)
    if baseline_problem is not None:
        sys.stdout.flush()
        _error(f"--baseline {args.baseline}: {baseline_problem}")
    if result.interrupted is not None:
        return _STOP_CODES.get(result.interrupted, EXIT_INTERRUPTED)
    if result.error is not None:
        return EXIT_RUN_ERROR
    if not all(check.passed for check in checks) or regressed:
        return EXIT_FAILED
    return EXIT_BASELINE if baseline_problem is not None else EXIT_OK


def _rescore(args: argparse.Namespace) -> int:
    passed = rescore_command(
        args, check_formats=partial(_check_formats, from_flag=False), shown_path=_shown_path
    )
    return EXIT_OK if passed else EXIT_FAILED


def _merge(args: argparse.Namespace) -> int:
    config = gate_config(
        args.config,
        min_score=args.min_score,
        max_errors=args.max_errors,
        output=args.output,
        formats=args.formats,
    )
    _check_formats(config, from_flag=bool(args.formats))
    files = merge_inputs(args.paths)
    rows_path = config.output_dir / ROWS_FILE
    if any(path.resolve() == rows_path.resolve() for path in files):
        return _error(f"{rows_path} is one of the inputs: write the merge to another --output")
    report = anyio.run(merge_files, files)
    check_config(config, report)
    checks = check_thresholds(report, config)
    path = run_store_path(config, flag=args.store, disabled=args.no_store)
    save = partial(
        save_merged,
        report,
        config,
        rows_path=rows_path,
        store_path=path,
        name=args.name,
        labels=args.labels or (),
        config_file=args.config,
        gate=gate_of(checks, checked=report.complete),
    )
    written, run_id, not_stored = anyio.run(save)
    if not_stored is not None:
        sys.stderr.write(f"aeval: warning: {not_stored}\n")
    console = terminal_console()
    if not args.quiet:
        print_run_summary(
            console,
            report,
            config=config.path,
            checks=checks,
            files=[*written, rows_path],
            interrupted=not report.complete,
            stored=None if run_id is None or path is None else f"{run_id} (in {_shown_path(path)})",
        )
    label = None if report.complete else "PARTIAL"
    print_line(console, verdict(checks, stopped=label, report=report))
    if not report.complete:
        return EXIT_RUN_ERROR
    return EXIT_OK if all(check.passed for check in checks) else EXIT_FAILED


async def _read_report(path: Path) -> EvaluationReport:
    if path.suffix.lower() == ".json":
        from ..formatters.json import report_from_json

        data = await anyio.Path(path).read_bytes()
        try:
            return report_from_json(data)
        except FormatError as exc:
            raise FormatError(f"{path}: {exc}") from exc
    rows, run = await read_run(path)
    return EvaluationReport(rows, run=run)


async def _report(path: Path, format: str, output: Path | None) -> None:
    report = await _read_report(path)
    if output is None:
        sys.stdout.write(safe_text(report.format(format)))
        sys.stdout.write("\n")
    else:
        await report.save_as(output, format)


def _shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _error(message: str) -> int:
    sys.stderr.write(f"aeval: error: {printable(message)}\n")
    return EXIT_CONFIG


def _reader_left() -> int:
    """The reader of standard output went away (``aeval report ... | head``): stop quietly,
    with the exit code of a process ended by SIGPIPE, as other command-line tools do."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing left to flush at exit
    return 128 + 13


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``aeval`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Called as the program (no ``argv``), it does not wait for threads that the target or a
    strategy started and left running (non-daemon threads would keep the process alive after
    its verdict): it says so on stderr and ends the process with the exit code.
    """
    try:
        code = _command(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_left()
    if argv is None and (threads := lingering_threads()):
        exit_past(threads, code)
    return code


def _command(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "schema":
            sys.stdout.write(schema_text())
            return EXIT_OK
        if args.command == "compare":
            return run_compare(args)
        if args.command == "report":
            if not args.rows.is_file():
                return _error(f"{args.rows}: no such file")
            anyio.run(_report, args.rows, args.format, args.output)
            return EXIT_OK
        if args.command == "runs":
            path = read_store_path(args.store)
            return anyio.run(
                partial(
                    runs_command,
                    path=path,
                    name=args.name,
                    last=args.last,
                    format=args.format,
                    shards=args.shards,
                )
            )
        if args.command == "history":
            path = read_store_path(args.store)
            return anyio.run(
                partial(
                    history_command,
                    path=path,
                    name=args.name,
                    tag=args.tag,
                    strategy=args.strategy,
                    since=args.since,
                    last=args.last,
                    format=args.format,
                    output=args.output,
                    shards=args.shards,
                )
            )
        if args.command == "merge":
            return _merge(args)
        if args.command == "rescore":
            return _rescore(args)
        return _run(args)
    except ConfigError as exc:
        for problem in exc.problems:
            _error(problem)
        return EXIT_CONFIG
    except (
        FormatError,
        SampleLoadError,
        ComparisonError,
        StoreError,
        UsageError,
        MergeError,
        ExecutorError,
        MissingExtraError,
    ) as exc:
        return _error(str(exc))
    except ReportWriteError as exc:
        _error(str(exc))
        return EXIT_RUN_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("aeval: interrupted\n")
        return EXIT_INTERRUPTED
