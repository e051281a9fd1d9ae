"""``aeval calibrate REF``: a judge's stored verdicts against the reviewers' stored labels,
the reviewers' agreement, and a gate on kappa (no model call)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson

from .._display import printable
from .._reporting._judging import Calibration
from .._store import DEFAULT_STORE_PATH, LabelCalibration, RunStore
from ..formatters.json import calibration_data
from ._arguments import kappa_value
from ._exits import EXIT_FAILED, EXIT_OK
from ._history import STORE_ENV, UsageError, read_store_path
from ._parser import ELSEWHERE

__all__ = ["add_calibrate_command", "run_calibrate"]

_SHOWN = 10


def add_calibrate_command(commands: Any) -> None:
    """Declare ``aeval calibrate`` on the command's subparsers."""
    calibrate = commands.add_parser(
        "calibrate",
        help=ELSEWHERE["calibrate"],
        description="How a strategy's verdicts in a stored run agree with the reviewers' "
        "labels in the store (aeval view, RunStore.add_label): accuracy, Cohen's kappa with "
        "its 95%% interval, the confusion matrix and the disagreements; the sample files' "
        "label: apart; and how the reviewers agree with each other (Cohen's kappa for two, "
        "Fleiss' kappa for more). Exit codes: 0 done (and kappa at least --min-kappa), 1 "
        "kappa below --min-kappa or undefined, 2 no store, no such run, no current label or "
        "no strategy to calibrate.",
    )
    calibrate.add_argument("ref", metavar="REF", help="the run: an id, latest, NAME@latest~1")
    calibrate.add_argument("--reviewer", metavar="NAME", help="only this reviewer's labels")
    calibrate.add_argument(
        "--strategy", metavar="S", help="the strategy (needed when several have labels)"
    )
    calibrate.add_argument(
        "--min-kappa",
        type=kappa_value,
        metavar="K",
        help="exit 1 when the judge's kappa against the labels is below K (or undefined)",
    )
    calibrate.add_argument("--format", choices=("text", "json"), default="text")
    calibrate.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help=f"the run store (default ${STORE_ENV}, else {DEFAULT_STORE_PATH})",
    )


async def _calibrate(args: argparse.Namespace) -> tuple[str, LabelCalibration]:
    path = read_store_path(args.store)
    if not await anyio.Path(path).is_file():
        raise UsageError(f"{path}: no run store there: give one with --store PATH or {STORE_ENV}")
    async with RunStore(path) as store:
        run_id = await store.resolve(args.ref)
        try:
            found = await store.calibrate(run_id, strategy=args.strategy, reviewer=args.reviewer)
        except ValueError as exc:
            raise UsageError(f"run {run_id}: {exc}") from None
    return run_id, found


def _confusion(calibration: Calibration) -> list[str]:
    (pass_pass, pass_fail), (fail_pass, fail_fail) = calibration.confusion
    return [
        "                verdict pass  verdict fail",
        f"  label pass    {pass_pass:>12}  {pass_fail:>12}",
        f"  label fail    {fail_pass:>12}  {fail_fail:>12}",
    ]


def _disagreements(calibration: Calibration) -> list[str]:
    found = calibration.disagreements
    if not found:
        return []
    lines = [f"  disagreements ({len(found)}):"]
    for d in found[:_SHOWN]:
        repeat = f" (repeat {d.repeat})" if d.repeat else ""
        label, verdict = ("pass" if d.label else "fail"), ("pass" if d.passed else "fail")
        why = f": {d.explanation}" if d.explanation else ""
        lines.append(f"    {d.sample}{repeat}: label {label}, verdict {verdict}{why}")
    if len(found) > _SHOWN:
        lines.append(f"    ... and {len(found) - _SHOWN} more (--format json lists them all)")
    return lines


def _text(run_id: str, found: LabelCalibration) -> list[str]:
    who = found.reviewer or ", ".join(found.reviewers)
    lines = [f"Run {run_id}, strategy {found.strategy}"]
    lines.append(f"Review labels ({who}): {found.review.describe()}")
    lines += _confusion(found.review) + _disagreements(found.review)
    left = []
    if found.stale:
        left.append(f"{found.stale} stale label(s) (the output changed since)")
    if found.ties:
        left.append(f"{found.ties} row(s) whose reviewers split evenly")
    if left:
        lines.append(f"  left out: {'; '.join(left)}")
    if found.sample_file is not None:
        lines.append(f"Sample file labels: {found.sample_file.describe()}")
    if found.agreement is not None:
        lines.append(f"Reviewer agreement: {found.agreement.describe()}")
        if len(found.agreement.reviewers) > 2:
            lines += [f"  Cohen's kappa {pair.describe()}" for pair in found.agreement.pairs]
    return lines


def _json(run_id: str, found: LabelCalibration, gate: dict[str, Any] | None) -> bytes:
    agreement = found.agreement
    document: dict[str, Any] = {
        "run": run_id,
        "strategy": found.strategy,
        "reviewer": found.reviewer,
        "reviewers": list(found.reviewers),
        "review": calibration_data(found.review),
        "sampleFile": None if found.sample_file is None else calibration_data(found.sample_file),
        "stale": found.stale,
        "ties": found.ties,
        "agreement": None
        if agreement is None
        else {
            "reviewers": list(agreement.reviewers),
            "rows": agreement.rows,
            "kappa": agreement.kappa,
            "method": "cohen" if len(agreement.reviewers) == 2 else "fleiss",
            "pairs": [
                {
                    "reviewers": list(pair.reviewers),
                    "rows": pair.rows,
                    "agreed": pair.agreed,
                    "kappa": pair.kappa,
                    "kappaInterval": None
                    if pair.statistics is None
                    else dict(zip(("low", "high"), pair.statistics.interval(), strict=True)),
                }
                for pair in agreement.pairs
            ],
        },
        "gate": gate,
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def run_calibrate(args: argparse.Namespace) -> int:
    """Run ``aeval calibrate``; 0, or 1 when kappa is below ``--min-kappa`` (or undefined).

    Raises:
        UsageError, StoreError: No store, no such run, nothing to calibrate (exit 2).
    """
    run_id, found = anyio.run(_calibrate, args)
    minimum: float | None = args.min_kappa
    gate: dict[str, Any] | None = None
    line = None
    failed = False
    if minimum is not None:
        kappa = found.review.kappa
        failed = kappa is None or kappa < minimum
        shown = f"undefined ({found.review.kappa_undefined})" if kappa is None else f"{kappa:.2f}"
        verdict = "below" if failed else "at least"
        line = f"kappa {shown} is {verdict} the minimum {minimum:g}"
        if kappa is None:
            line = f"kappa {shown}: the minimum {minimum:g} is not met"
        gate = {"minKappa": minimum, "kappa": kappa, "passed": not failed}
    if args.format == "json":
        sys.stdout.buffer.write(_json(run_id, found, gate))
    else:
        sys.stdout.write("".join(printable(text) + "\n" for text in _text(run_id, found)))
    if line is not None:
        sys.stderr.write(f"aeval: {printable(line)}\n")
    return EXIT_FAILED if failed else EXIT_OK
