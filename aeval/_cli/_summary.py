"""The gate (thresholds) and the summary printed at the end of a run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._reporting._report import EvaluationReport, partial_note
from .._reporting._results import EvaluationRow
from .._reporting._run_info import Gate, GateCheck
from .._util._numbers import format_percent
from ._config import ErrorLimit, RunConfig
from ._exits import shown_path

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Check", "check_thresholds", "error_types", "gate_of", "print_summary", "verdict"]


@dataclass(frozen=True, slots=True)
class Check:
    """One threshold and whether the run met it.

    Attributes:
        name: ``"score"``, ``"tag <name>"`` or ``"kappa <strategy>"``.
        actual: The score (or kappa) reached, ``None`` when no row counts toward it.
        minimum: The threshold, in percent (a kappa for a kappa check, a count for
            ``max_errors`` given as a count).
        passed: Whether the threshold is met (or does not apply).
        note: Why a threshold does not apply, if so.
        bound: ``"min"`` (``actual`` must reach ``minimum``) or ``"max"`` (``actual`` must
            not exceed it: ``max_errors``).
        count: Whether ``actual`` and ``minimum`` are row counts (not percents).
    """

    name: str
    actual: float | None
    minimum: float
    passed: bool
    note: str | None = None
    bound: Literal["min", "max"] = "min"
    count: bool = False

    def describe(self) -> str:
        """``score 66.67% < 80.00%``, ``tag smoke 100.00% >= 100.00%``,
        ``kappa judge 0.42 < 0.60``, ``errors 3 > 0`` or ``errors 12.50% > 5.00%``."""
        if self.actual is None:
            return f"{self.name}: {self.note}"
        if self.bound == "max":
            sign = "<=" if self.actual <= self.minimum else ">"
        else:
            sign = ">=" if self.actual >= self.minimum else "<"
        if self.name.startswith("kappa "):
            return f"{self.name} {self.actual:.2f} {sign} {self.minimum:.2f}"
        if self.count:
            return f"{self.name} {self.actual:.0f} {sign} {self.minimum:.0f}"
        return f"{self.name} {format_percent(self.actual)} {sign} {format_percent(self.minimum)}"


_UNSCORED = "scored rows"


def error_types(rows: Iterable[EvaluationRow]) -> Counter[str]:
    """The error rows of ``rows`` per exception type."""
    return Counter(row.error.type for row in rows if row.error is not None)


def _unscored_note(report: EvaluationReport, types: Mapping[str, int]) -> str:
    parts = []
    if report.error_count:
        parts.append(_plural(report.error_count, "error"))
    if report.unscored_count:
        parts.append(f"{report.unscored_count} unscored")
    if report.skipped_count:
        parts.append(f"{report.skipped_count} skipped")
    if report.not_applicable_count:
        parts.append(f"{report.not_applicable_count} not applicable")
    rows = report.evaluation_count
    what = "the only row could not" if rows == 1 else f"none of the {rows} rows could"
    note = f"{what} be scored ({', '.join(parts)})"
    if types:
        kind, count = max(types.items(), key=lambda item: (item[1], item[0]))
        note += f"; the most common error: {kind} in {_plural(count, 'row')}"
        for row in report.evaluations:
            if row.error is not None and row.error.type == kind:
                note += f": {_shortened(row.error.message)}"
                break
    return note


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _shortened(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _error_check(report: EvaluationReport, limit: ErrorLimit) -> Check:
    errors, rows = report.error_count, report.evaluation_count
    passed = not limit.exceeded(errors, rows)
    if limit.count is not None:
        return Check("errors", errors, limit.count, passed, bound="max", count=True)
    assert limit.percent is not None
    share = 100.0 * errors / rows if rows else 0.0
    return Check("errors", share, limit.percent, passed, bound="max")


def check_thresholds(
    report: EvaluationReport,
    config: RunConfig,
    *,
    errors: Mapping[str, int] | None = None,
) -> list[Check]:
    """Compare the report with ``min_score``, ``tag_min_scores``, ``min_kappa`` and
    ``max_errors``.

    A tag minimum whose tag has no rows fails the gate (a misspelt tag must not pass
    silently) unless a tag filter left that tag's samples out of the run. A run with rows
    none of which could be scored (every call failed, the judge was unreachable) fails, with
    or without thresholds, naming the most common error.

    Args:
        errors: The error rows per exception type (default: counted in the report's rows).
    """
    checks: list[Check] = []
    scored = report.passed_count + report.failed_count
    if report.evaluation_count and not scored:
        types = errors if errors is not None else error_types(report.evaluations)
        note = _unscored_note(report, types)
        checks.append(Check(_UNSCORED, None, 1.0, False, note, count=True))
    if config.max_errors is not None:
        checks.append(_error_check(report, config.max_errors))
    if config.min_score is not None:
        score = report.score
        checks.append(Check("score", score, config.min_score, score >= config.min_score))
    statistics = report.tag_statistics
    for tag, minimum in config.tag_min_scores.items():
        name = f"tag {tag}"
        stats = statistics.get(tag)
        if stats is None or stats.total == 0:
            if config.tags and tag not in config.tags:
                checks.append(Check(name, None, minimum, True, "not run (left out by the tags)"))
            else:
                checks.append(Check(name, None, minimum, False, "no evaluated sample has it"))
            continue
        checks.append(Check(name, stats.score, minimum, stats.score >= minimum))
    if config.min_kappa is not None:
        checks += _kappa_checks(report, config.min_kappa)
    return checks


def _kappa_checks(report: EvaluationReport, minimum: float) -> list[Check]:
    """One check per strategy with labelled rows; a failed one when no sample has a label."""
    if not report.calibration:
        note = "no evaluated sample has a label (label: pass|fail)"
        return [Check("kappa", None, minimum, False, note)]
    checks = []
    for name, calibration in report.calibration.items():
        kappa = calibration.kappa
        if kappa is None:
            note = calibration.describe()
            checks.append(Check(f"kappa {name}", None, minimum, False, note))
        else:
            checks.append(Check(f"kappa {name}", kappa, minimum, kappa >= minimum))
    return checks


def gate_of(checks: Sequence[Check], *, checked: bool = True) -> Gate:
    """The gate the reports record: each threshold, met or not, and the verdict.

    Args:
        checks: The thresholds.
        checked: ``False`` for a run whose thresholds were not checked (a partial run, a
            shard).
    """
    records = tuple(
        GateCheck(
            name=check.name,
            bound=check.bound,
            threshold=check.minimum,
            actual=check.actual,
            passed=check.passed if checked else None,
            text=check.describe() if checked else f"{check.name}: not checked",
        )
        for check in checks
    )
    if not checked or not checks:
        return Gate("none", records)
    return Gate("passed" if all(check.passed for check in checks) else "missed", records)


def verdict(checks: Sequence[Check], *, stopped: str | None, report: EvaluationReport) -> str:
    """The last line of the summary.

    Args:
        checks: The thresholds and whether they were met.
        stopped: What stopped the run early (``INTERRUPTED``, ``TERMINATED``, ``STOPPED``).
        report: The report.
    """
    if stopped is not None:
        note = partial_note(report) or "run stopped"
        return f"{stopped}: {note}; the report is partial and no threshold was checked"
    missed = [check for check in checks if not check.passed]
    if missed:
        return "FAILED: " + "; ".join(check.describe() for check in missed)
    if not checks:
        return "DONE: no threshold configured"
    return "PASSED: " + "; ".join(check.describe() for check in checks if check.actual is not None)


def print_summary(
    console: Console,
    report: EvaluationReport,
    *,
    config: RunConfig,
    checks: Sequence[Check],
    files: Sequence[Path],
    interrupted: bool,
    stored: tuple[str | None, Path | None],
    rescored: str | None = None,
) -> None:
    """Print the summary a run, a merge or a rescore ends with.

    Args:
        console: Where to print.
        report: The run's report.
        config: The run's configuration.
        checks: Its thresholds.
        files: The files written.
        interrupted: Whether the run was stopped (or is partial).
        stored: The run's id in the run store and the store, each ``None`` when it was not
            recorded.
        rescored: The run a rescore rescored, named on the stored run's line.
    """
    from ..formatters._report_terminal import print_run_summary

    run_id, store = stored
    line = None
    if run_id is not None and store is not None:
        line = f"{run_id} (in {shown_path(store)})"
        if rescored is not None:
            line += f", rescore of {rescored}"
    print_run_summary(
        console,
        report,
        config=config.path,
        checks=checks,
        files=files,
        interrupted=interrupted,
        stored=line,
    )
