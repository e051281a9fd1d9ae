"""``aeval dataset from REF --failures [--reviewed fail] --output FILE.yaml``: the failed rows
of a stored run (offline, or a live service's traffic) as samples, ready to be committed."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from .._display import printable
from .._store import DEFAULT_STORE_PATH, RunStore
from .._store._dataset import FailedSample, Selection, failed_samples, samples_yaml
from .._util._files import write_atomic
from ._exits import EXIT_OK, shown_path
from ._history import STORE_ENV, UsageError, read_store_path
from ._parser import ELSEWHERE

__all__ = ["add_dataset_command", "run_dataset"]


def add_dataset_command(commands: Any) -> None:
    """Declare ``aeval dataset from`` on the command's subparsers."""
    dataset = commands.add_parser(
        "dataset",
        help=ELSEWHERE["dataset"],
        description="Build sample files from stored runs.",
    )
    actions = dataset.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    source = actions.add_parser(
        "from",
        help="write the failed rows of a stored run as a YAML sample file",
        description="Write the failed rows of a stored run (aeval run, or a live service's "
        "OnlineEvaluator(store=...)) as samples in the YAML sample format: each failed sample "
        "once, with its parameters, expected output, tags and metadata, the output that "
        "failed in metadata.failed_output, where it failed in metadata.failure, and the "
        "reviewer's note as metadata.description. Exit codes: 0 written (or nothing to "
        "write, said on stderr), 2 no store, no such run, or FILE exists without --force.",
    )
    source.add_argument("ref", metavar="REF", help="the run: an id, latest, NAME@latest~1")
    source.add_argument(
        "--failures",
        action="store_true",
        required=True,
        help="the rows that failed (failed or error)",
    )
    source.add_argument(
        "--reviewed",
        choices=("fail",),
        help="instead, the rows a reviewer labelled fail (a current label), whatever the "
        "strategy said",
    )
    source.add_argument(
        "--output", type=Path, required=True, metavar="FILE.yaml", help="the sample file to write"
    )
    source.add_argument("--force", action="store_true", help="replace FILE if it exists")
    source.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help=f"the run store (default ${STORE_ENV}, else {DEFAULT_STORE_PATH})",
    )


async def _samples(args: argparse.Namespace) -> tuple[str, list[FailedSample]]:
    path = read_store_path(args.store)
    if not await anyio.Path(path).is_file():
        raise UsageError(f"{path}: no run store there: give one with --store PATH or {STORE_ENV}")
    async with RunStore(path) as store:
        run_id = await store.resolve(args.ref)
        report = await store.load(run_id)
        labels = await store.labels(run_id)
    select: Selection = "reviewed-fail" if args.reviewed == "fail" else "failures"
    return run_id, failed_samples(report, run_id, select=select, labels=labels)


def run_dataset(args: argparse.Namespace) -> int:
    """Run ``aeval dataset from``; 0 when written or when there was nothing to write.

    Raises:
        UsageError, StoreError: No store, no such run, or the file exists (exit 2).
        ReportWriteError: The file cannot be written (exit 3).
    """
    output: Path = args.output
    if output.is_dir():
        raise UsageError(f"{output}: is a directory: give a file (e.g. {output / 'failed.yaml'})")
    if output.exists() and not args.force:
        raise UsageError(
            f"{output}: the file exists: give --force to replace it, or another --output"
        )
    run_id, samples = anyio.run(_samples, args)
    what = "rows a reviewer labelled fail" if args.reviewed == "fail" else "failed rows"
    if not samples:
        sys.stderr.write(printable(f"aeval: run {run_id} has no {what}: nothing written") + "\n")
        return EXIT_OK
    rows = sum(len(sample.rows) for sample in samples)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    header = (
        f"{len(samples)} sample(s) from the {what} of run {run_id}, written by "
        f"`aeval dataset from` on {now}.\nThe output that failed is in metadata.failed_output; "
        "review the samples (an expected output, the checks) before committing them."
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, samples_yaml(samples, header=header))
    passed = [s.name for s in samples if s.entry["metadata"]["failure"].get("labelled_pass_by")]
    if passed:
        sys.stderr.write(
            printable(
                f"aeval: {len(passed)} of these failed sample(s) a reviewer labelled pass "
                f"({', '.join(passed[:5])}{'…' if len(passed) > 5 else ''}): the strategy may "
                "be wrong there; metadata.failure.labelled_pass_by names the reviewers"
            )
            + "\n"
        )
    sys.stdout.write(
        printable(
            f"{len(samples)} sample(s) ({rows} {what}) of run {run_id} written to "
            f"{shown_path(output)}"
        )
        + "\n"
    )
    return EXIT_OK
