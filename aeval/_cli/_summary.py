"""The gate (thresholds) and the summary printed at the end of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.console import Console

from .._numbers import format_percent
from .._report import EvaluationReport, partial_note
from .._summary import print_report
from .._terminal import print_line
from ._config import RunConfig

__all__ = ["Check", "check_thresholds", "print_summary", "verdict"]


@dataclass(frozen=True, slots=True)
class Check:
    """One threshold and whether the run met it.

    Attributes:
        name: ``"score"``, ``"tag <name>"`` or ``"kappa <strategy>"``.
        actual: The score (or kappa) reached, ``None`` when no row counts toward it.
        minimum: The threshold, in percent (a kappa for a kappa check).
        passed: Whether the threshold is met (or does not apply).
        note: Why a threshold does not apply, if so.
    """

    name: str
    actual: float | None
    minimum: float
    passed: bool
    note: str | None = None

    def describe(self) -> str:
        """``score 66.67% < 80.00%``, ``tag smoke 100.00% >= 100.00%`` or
        ``kappa judge 0.42 < 0.60``."""
        if self.actual is None:
            return f"{self.name}: {self.note}"
        sign = ">=" if self.actual >= self.minimum else "<"
        if self.name.startswith("kappa "):
            return f"{self.name} {self.actual:.2f} {sign} {self.minimum:.2f}"
        return f"{self.name} {format_percent(self.actual)} {sign} {format_percent(self.minimum)}"


def check_thresholds(report: EvaluationReport, config: RunConfig) -> list[Check]:
    """Compare the report with ``min_score`` and ``tag_min_scores``.

    A tag minimum whose tag has no rows fails the gate (a misspelt tag must not pass
    silently) unless a tag filter left that tag's samples out of the run.
    """
    checks: list[Check] = []
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


def _minimum(checks: Sequence[Check], name: str, *, interrupted: bool) -> str:
    for check in checks:
        if check.name == name:
            if interrupted:
                return f"{format_percent(check.minimum)} not checked"
            mark = "ok" if check.passed else "MISSED"
            return f"{format_percent(check.minimum)} {mark}"
    return ""


def print_summary(
    console: Console,
    report: EvaluationReport,
    *,
    config: RunConfig,
    checks: Sequence[Check],
    files: Sequence[Path],
    interrupted: bool,
    stored: str | None = None,
) -> None:
    """Print the report's summary (see ``report.print()``), the gate's notes and the files.

    Args:
        stored: The run's id in the run store (and where), when it was recorded.
    """
    extra = [("config", str(config.path))]
    if stored is not None:
        extra.append(("run id", stored))
    print_report(
        report,
        console=console,
        minimum=partial(_minimum, checks, interrupted=interrupted),
        extra=extra,
    )
    for check in checks:
        if check.actual is None and check.name not in _shown_tags(report):
            print_line(console, check.describe())
        elif check.name.startswith("kappa "):
            mark = "ok" if check.passed else "MISSED"
            print_line(console, f"{check.describe()} (min kappa {mark})")
    if files:
        print_line(console, "Files written:")
        for path in files:
            print_line(console, f"  {path}")


def _shown_tags(report: EvaluationReport) -> set[str]:
    return {f"tag {tag}" for tag in report.tag_statistics}
