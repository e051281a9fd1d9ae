"""The ``aeval run`` and ``aeval rescore`` commands: the configuration with its flags, the
run, its verdict and exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from .._engine._progress import RunProgress, progress_for
from .._exceptions import (
    ComparisonError,
    FormatError,
    StoreError,
)
from .._reporting._report import EvaluationReport
from .._reporting._run_info import Gate
from ..formatters._terminal import print_line, print_plain_line, terminal_console
from ..trace import Replay
from ._agents import rescore_command, scorer_tools
from ._build import build_strategies, import_object, import_paths
from ._compare import compare_run, gate_from
from ._config import ConfigError, RunConfig, load_config
from ._exits import (
    EXIT_BASELINE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_ERROR,
    INTERRUPTIONS,
    STOP_CODES,
    error,
)
from ._history import (
    config_error,
    run_store_path,
)
from ._process import fewer_collections
from ._run import execute, signals_kept
from ._summary import check_thresholds, gate_of, print_summary, verdict

if TYPE_CHECKING:
    from rich.console import Console


_SETTINGS = {
    "concurrency": "concurrency",
    "min_score": "min_score",
    "min_kappa": "min_kappa",
    "max_errors": "max_errors",
    "output": "output_dir",
    "timeout": "timeout",
    "repeats": "repeats",
    "name": "name",
    "tools": "tools",
}
"""The flags of ``aeval run`` that replace a setting of the configuration as given: each
flag's destination and the setting it replaces."""


def _overrides(config: RunConfig, args: argparse.Namespace) -> RunConfig:
    flags: dict[str, Any] = {setting: getattr(args, flag) for flag, setting in _SETTINGS.items()}
    if args.tags:
        tags = [tag.strip() for group in args.tags for tag in group.split(",")]
        flags["tags"] = tuple(tag for tag in tags if tag)
    if args.formats:
        flags["formats"] = tuple(args.formats)
    if args.labels:
        flags["labels"] = tuple(dict.fromkeys((*config.labels, *args.labels)))
    return config.overridden(flags)


def check_formats(config: RunConfig, *, from_flag: bool) -> None:
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


def _progress(console: Console | None, strategies: int) -> RunProgress | None:
    """The display of the run, on stderr so that ``aeval run > out.txt`` holds the summary
    alone; ``None`` with ``--quiet`` (no console)."""
    if console is None:
        return None
    return progress_for(strategies)


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


def run_command(args: argparse.Namespace) -> int:
    with signals_kept(), fewer_collections():
        return _run_kept(args)


def _run_kept(args: argparse.Namespace) -> int:
    config = _overrides(load_config(args.config), args)
    check_formats(config, from_flag=bool(args.formats))
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
    gate = gate_from(args) if args.baseline is not None else None
    baseline = None
    if args.baseline is not None:
        from .._compare import load_ref, store_path

        lookup = path if path is not None else store_path(None)
        baseline = anyio.run(partial(load_ref, args.baseline, role="baseline", store=lookup))
    elif args.fail_on_regression or args.require_non_inferiority is not None:
        return error(
            "--fail-on-regression and --require-non-inferiority compare the run with a "
            "baseline: give it with --baseline REF (a rows.jsonl, a report.json or a stored run)"
        )
    executor = _executor(args, config)
    # --quiet prints the verdict alone, without a console (rich is not imported for it)
    console = None if args.quiet else terminal_console()

    def say(text: str) -> None:
        if console is None:
            print_plain_line(text)
        else:
            print_line(console, text)

    def decide(report: EvaluationReport, errors: Mapping[str, int], finished: bool) -> Gate:
        checks = check_thresholds(report, config, errors=errors)
        # a shard holds part of the samples: aeval merge checks the thresholds
        return gate_of(checks, checked=finished and args.shard is None)

    progress = _progress(console, len(built.strategies))
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
    stopped = result.interrupted is not None or result.error is not None
    # a shard holds part of the samples: its thresholds are checked on the merged report
    checks = (
        []
        if args.shard is not None
        else check_thresholds(result.report, config, errors=result.error_types)
    )
    if console is not None:
        print_summary(
            console,
            result.report,
            config=config,
            checks=checks,
            files=result.files,
            interrupted=stopped,
            stored=(result.run_id, path),
        )
    if result.error is not None:
        error(f"the run stopped: {type(result.error).__name__}: {result.error}")
    label = None
    if result.interrupted is not None:
        label = "INTERRUPTED" if result.interrupted in INTERRUPTIONS else "TERMINATED"
    elif result.error is not None:
        label = "STOPPED"
    regressed, baseline_line, baseline_problem = False, None, None
    if baseline is not None and label is not None:
        baseline_line = "BASELINE NOT COMPARED: the run stopped before its last sample"
    elif baseline is not None and gate is not None:
        try:
            baseline_line, regressed = compare_run(
                terminal_console() if console is None else console,
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
    say(line)
    if baseline_line is not None:
        say(baseline_line)
    if baseline_problem is not None:
        sys.stdout.flush()
        error(f"--baseline {args.baseline}: {baseline_problem}")
    if result.interrupted is not None:
        return STOP_CODES.get(result.interrupted, EXIT_INTERRUPTED)
    if result.error is not None:
        return EXIT_RUN_ERROR
    if not all(check.passed for check in checks) or regressed:
        return EXIT_FAILED
    return EXIT_BASELINE if baseline_problem is not None else EXIT_OK


def rescore(args: argparse.Namespace) -> int:
    passed = rescore_command(args, check_formats=partial(check_formats, from_flag=False))
    return EXIT_OK if passed else EXIT_FAILED
