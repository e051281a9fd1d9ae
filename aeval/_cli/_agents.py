"""The agent parts of the command line: ``--tools`` and ``aeval rescore``."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from .._engine._scorer import Scorer
from .._engine._sinks import JsonlSink
from .._engine._tools import Tools
from .._exceptions import StoreError
from .._reporting._report import EvaluationReport
from ..formatters._terminal import print_line, terminal_console
from ..trace import Replay
from ._arguments import add_output_options, add_store_options
from ._build import build_strategies
from ._config import RunConfig, load_config
from ._history import config_error, run_store_path
from ._run import ROWS_FILE
from ._summary import check_thresholds, gate_of, print_summary, verdict

__all__ = [
    "Rescored",
    "add_rescore_command",
    "rescore",
    "rescore_command",
    "scorer_tools",
    "tools_option",
]

_TOOLS = re.compile(r"^(live|fixtures|replay:.+)$")


def tools_option(text: str) -> str:
    """``--tools``: ``live``, ``fixtures`` or ``replay:REF``."""
    if _TOOLS.match(text) is None:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give live (call the tools), fixtures (the samples' tools: fixtures) or "
            "replay:REF (a stored run, a rows.jsonl or a report.json, e.g. replay:latest)"
        )
    return text


def scorer_tools(config: RunConfig, store: Path | None) -> Tools:
    """The Scorer's ``tools`` for the configuration's ``tools`` (``--tools``), a replay read
    from ``store`` (the default store when ``None``) but not loaded yet."""
    tools = config.tools or "live"
    if tools.startswith("replay:"):
        from .._compare import store_path

        return Replay(tools.removeprefix("replay:"), store=store or store_path(None))
    if tools == "fixtures":
        return "fixtures"
    return "live"


def add_rescore_command(commands: Any) -> None:
    """``aeval rescore REF --config CONFIG``."""
    rescore_parser = commands.add_parser(
        "rescore",
        help="apply a configuration's strategies to a stored run's outputs and traces",
        description="Apply the strategies of CONFIG to the outputs and traces of a run made "
        "before (a stored run's ref, a rows.jsonl or a report.json) without calling the "
        "target; write the reports into the configuration's output directory and record the "
        "new run with the label rescore-of:RUN. Exit codes: 0 thresholds met, 1 a threshold "
        "missed, 2 configuration or usage error.",
    )
    rescore_parser.add_argument(
        "ref",
        metavar="REF",
        help="the run to rescore: a stored run (run id, latest, NAME@latest~1), a rows.jsonl "
        "or a report.json",
    )
    rescore_parser.add_argument(
        "--config",
        required=True,
        metavar="CONFIG",
        help="the configuration whose strategies, output and thresholds apply",
    )
    add_output_options(rescore_parser, formats=False)
    add_store_options(
        rescore_parser,
        run="the new run",
        name="the new run's name in the run store (default: the config's)",
        store="the run store REF is read from and the new run recorded in (default: "
        "AEVAL_STORE, the config's store:, or .aeval/runs.sqlite)",
        labels=False,
    )
    rescore_parser.add_argument("--quiet", action="store_true", help="no tables: the verdict only")


@dataclass(frozen=True, slots=True)
class Rescored:
    """What ``aeval rescore`` made: the report, the files written and the stored run."""

    report: EvaluationReport
    files: tuple[Path, ...]
    run_id: str | None
    source: str


async def _source_name(ref: str, store: Path) -> str:
    if await anyio.Path(ref).is_file() or not await anyio.Path(store).is_file():
        return ref
    from .._store import RunStore

    async with RunStore(store) as opened:
        try:
            return await opened.resolve(ref)
        except (LookupError, ValueError):
            return ref


async def rescore(
    config: RunConfig,
    ref: str,
    *,
    read_from: Path,
    record_in: Path | None,
    name: str | None = None,
) -> Rescored:
    """Rescore ``ref`` with the strategies of ``config``; write and record the new run.

    Args:
        config: The configuration (its strategies, output, thresholds and run name).
        ref: The stored run's ref, a ``rows.jsonl`` or a ``report.json``.
        read_from: The run store refs are read from.
        record_in: The run store the new run is recorded in; ``None`` for none.
        name: The new run's name (default: the configuration's).

    Raises:
        ConfigError: A strategy cannot be built.
        ComparisonError: ``ref`` cannot be read, naming it.
    """
    from .._compare._refs import load_report

    built = build_strategies(config)
    source = await load_report(ref, role="run to rescore", store=read_from)
    source_name = await _source_name(ref, read_from)
    async with AsyncExitStack() as stack:
        for resource in built.resources:
            close = getattr(resource, "aclose", None)
            if close is not None:
                stack.push_async_callback(close)
        await anyio.Path(config.output_dir).mkdir(parents=True, exist_ok=True)
        rows_path = config.output_dir / ROWS_FILE
        scorer = Scorer(config.concurrency, timeout=config.timeout, sinks=[JsonlSink(rows_path)])
        report = await scorer.rescore(source, *built.strategies)
    report = report.with_run(report.run.replace(gate=gate_of(check_thresholds(report, config))))
    files = [*await report.save(config.output_dir, formats=config.formats), rows_path]
    run_id = None
    if record_in is not None:
        from .._store import RunStore

        async with RunStore(record_in) as store:
            run_id = await store.save(
                report,
                name or config.run_name,
                labels=[*config.labels, f"rescore-of:{source_name}"],
                config=config.path.read_bytes(),
            )
    return Rescored(report, tuple(files), run_id, source_name)


def rescore_command(
    args: argparse.Namespace,
    *,
    check_formats: Callable[[RunConfig], None],
) -> bool:
    """``aeval rescore``: rescore, print the summary and the verdict; whether the thresholds
    were met.

    Raises:
        ConfigError: The configuration is wrong, or the run store cannot be written.
        ComparisonError: ``REF`` cannot be read.
    """
    from .._compare import store_path

    config = load_config(args.config, rescore=True)
    if args.output is not None:
        config = config.replace(output_dir=args.output)
    check_formats(config)
    record_in = run_store_path(config, flag=args.store, disabled=args.no_store)
    read_from = run_store_path(config, flag=args.store, disabled=False) or store_path(None)
    try:
        result = anyio.run(
            partial(
                rescore, config, args.ref, read_from=read_from, record_in=record_in, name=args.name
            )
        )
    except StoreError as exc:
        raise config_error(config, exc) from exc
    checks = check_thresholds(result.report, config)
    console = terminal_console()
    if not args.quiet:
        print_summary(
            console,
            result.report,
            config=config,
            checks=checks,
            files=result.files,
            interrupted=False,
            stored=(result.run_id, record_in),
            rescored=result.source,
        )
    print_line(console, verdict(checks, stopped=None, report=result.report))
    return all(check.passed for check in checks)
