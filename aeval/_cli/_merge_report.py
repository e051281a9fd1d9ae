"""The ``aeval merge`` and ``aeval report`` commands: shards' rows merged into one run, a
run's report rendered."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import anyio

from .._exceptions import (
    FormatError,
)
from .._reporting._codec import read_run
from .._reporting._report import EvaluationReport
from .._util._jsonsafe import safe_text
from ..formatters._terminal import print_line, terminal_console
from ._exits import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_RUN_ERROR,
    error,
)
from ._history import (
    run_store_path,
)
from ._run import ROWS_FILE
from ._run_command import check_formats
from ._scale import (
    check_config,
    gate_config,
    merge_files,
    merge_inputs,
    save_merged,
)
from ._summary import check_thresholds, gate_of, print_summary, verdict


def merge(args: argparse.Namespace) -> int:
    config = gate_config(
        args.config,
        min_score=args.min_score,
        max_errors=args.max_errors,
        output=args.output,
        formats=args.formats,
    )
    check_formats(config, from_flag=bool(args.formats))
    files = merge_inputs(args.paths)
    rows_path = config.output_dir / ROWS_FILE
    if any(path.resolve() == rows_path.resolve() for path in files):
        return error(f"{rows_path} is one of the inputs: write the merge to another --output")
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
        print_summary(
            console,
            report,
            config=config,
            checks=checks,
            files=[*written, rows_path],
            interrupted=not report.complete,
            stored=(run_id, path),
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


def report_command(args: argparse.Namespace) -> int:
    """``aeval report RUN``: render a run's ``rows.jsonl`` or ``report.json`` in a format."""
    if not args.rows.is_file():
        return error(f"{args.rows}: no such file")
    anyio.run(report, args.rows, args.format, args.output)
    return EXIT_OK


async def report(path: Path, format: str, output: Path | None) -> None:
    report = await _read_report(path)
    if output is None:
        sys.stdout.write(safe_text(report.format(format)))
        sys.stdout.write("\n")
    else:
        await report.save_as(output, format)
