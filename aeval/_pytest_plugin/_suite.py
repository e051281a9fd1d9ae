"""The suite report: one row per evaluation report of a test session.

Upstream (Quarkus LangChain4j ``SuiteEvaluationReporter``) writes
``evaluation-suite-report.md`` and ``evaluation-suite-report.json`` with the totals, the
average score and one row per registered report. Upstream averages the report scores
unweighted; here, as everywhere in aeval, the score pools the rows (passed rows / rows), so it
agrees with the counts printed beside it. The pytest plugin
builds one :class:`SuiteEntry` per report a test recorded; entries are plain data so that
pytest-xdist workers can send them to the controller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._util._files import write_atomic
from .._util._numbers import format_percent, truncate

if TYPE_CHECKING:
    from os import PathLike

    from .._reporting._report import EvaluationReport

__all__ = ["SUITE_REPORT_NAME", "SuiteEntry", "SuiteFailure", "SuiteReport"]

SUITE_REPORT_NAME = "evaluation-suite-report"

_REASON_LIMIT = 200


@dataclass(frozen=True, slots=True)
class SuiteFailure:
    """A row that did not pass, as the suite shows it.

    Attributes:
        sample: The sample's name.
        strategy: The strategy's name (``None`` when the function under test raised).
        score: The row's 0-1 score (``None`` when unscored).
        reason: The explanation or the error, truncated to 200 characters.
    """

    sample: str
    strategy: str | None
    score: float | None
    reason: str | None

    def describe(self) -> str:
        """``"Warranty [ExactMatchStrategy]: 0.00% - Expected ..."``."""
        name = self.sample if self.strategy is None else f"{self.sample} [{self.strategy}]"
        score = "unscored" if self.score is None else format_percent(self.score * 100)
        return f"{name}: {score}" + (f" - {self.reason}" if self.reason else "")


@dataclass(frozen=True, slots=True)
class SuiteEntry:
    """One evaluation report of the suite, reduced to what the suite report shows.

    Attributes:
        test_id: The pytest node id of the test that produced the report.
        label: Tells apart several reports of one test (``None`` for the only or first one).
        score: The report's score (0-100).
        evaluations: Rows in the report.
        passed: Rows that passed.
        failed: Rows that did not pass (failed, unscored and errors together, as upstream).
        errors: Rows where the function under test or a strategy raised.
        tag_scores: Score per tag, in order of first appearance.
        failures: The first rows that did not pass (at most ``max_failures`` of them).
        outcome: The test's outcome (``"passed"``, ``"failed"``, ``"skipped"``) when known.
    """

    test_id: str
    label: str | None = None
    score: float = 0.0
    evaluations: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    tag_scores: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    failures: tuple[SuiteFailure, ...] = ()
    outcome: str | None = None

    @classmethod
    def from_report(
        cls,
        test_id: str,
        report: EvaluationReport,
        *,
        label: str | None = None,
        outcome: str | None = None,
        max_failures: int = 20,
    ) -> SuiteEntry:
        """Summarise ``report`` for the suite."""
        failures = tuple(
            SuiteFailure(
                row.name,
                row.strategy,
                row.score,
                None if row.explanation is None else truncate(row.explanation, _REASON_LIMIT),
            )
            for row in report.failures[:max_failures]
        )
        return cls(
            test_id,
            label,
            report.score,
            report.evaluation_count,
            report.passed_count,
            report.not_passed_count,
            report.error_count,
            MappingProxyType(dict(report.tag_scores)),
            failures,
            outcome,
        )

    @property
    def name(self) -> str:
        """The test id, followed by the label in parentheses when there is one."""
        return self.test_id if self.label is None else f"{self.test_id} ({self.label})"

    def with_outcome(self, outcome: str | None) -> SuiteEntry:
        """Return a copy carrying the test's outcome."""
        return SuiteEntry(
            self.test_id,
            self.label,
            self.score,
            self.evaluations,
            self.passed,
            self.failed,
            self.errors,
            self.tag_scores,
            self.failures,
            outcome,
        )

    def describe(self) -> str:
        """One line in the style of upstream's ``EvaluationScoreReporter``.

        ``"tests/test_bot.py::test_faq [PASSED]: Score 80.00% (4/5 passed) - 1 evaluation(s)
        failed [Tags: faq: 75.00%]"``.
        """
        verdict = f" [{self.outcome.upper()}]" if self.outcome else ""
        line = (
            f"{self.name}{verdict}: Score {format_percent(self.score)} "
            f"({self.passed}/{self.evaluations} passed)"
        )
        if self.failed:
            line += f" - {self.failed} evaluation(s) failed"
        if self.tag_scores:
            tags = ", ".join(f"{tag}: {format_percent(s)}" for tag, s in self.tag_scores.items())
            line += f" [Tags: {tags}]"
        return line

    def to_dict(self) -> dict[str, Any]:
        """Plain data (str keys, lists, numbers), for pytest-xdist's channel and JSON."""
        return {
            "test_id": self.test_id,
            "label": self.label,
            "score": self.score,
            "evaluations": self.evaluations,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "tag_scores": dict(self.tag_scores),
            "failures": [[f.sample, f.strategy, f.score, f.reason] for f in self.failures],
            "outcome": self.outcome,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SuiteEntry:
        """The inverse of :meth:`to_dict`."""
        return cls(
            data["test_id"],
            data["label"],
            float(data["score"]),
            int(data["evaluations"]),
            int(data["passed"]),
            int(data["failed"]),
            int(data["errors"]),
            MappingProxyType(dict(data["tag_scores"])),
            tuple(SuiteFailure(*failure) for failure in data["failures"]),
            data["outcome"],
        )


class SuiteReport:
    """The reports of a test session, with upstream's suite totals.

    Args:
        entries: One entry per report, in the order the suite shows them.
        partial: Why some of the session's evaluations are missing (a pytest-xdist worker
            crashed), or ``None`` when the suite holds them all.
    """

    __slots__ = ("_entries", "partial")

    def __init__(self, entries: Iterable[SuiteEntry] = (), *, partial: str | None = None) -> None:
        self._entries = tuple(entries)
        self.partial = partial

    @property
    def entries(self) -> Sequence[SuiteEntry]:
        """The entries, in order."""
        return self._entries

    @property
    def total_reports(self) -> int:
        """The number of reports (upstream's "Total Test Classes")."""
        return len(self._entries)

    @property
    def total_evaluations(self) -> int:
        """Rows over every report."""
        return sum(entry.evaluations for entry in self._entries)

    @property
    def total_passed(self) -> int:
        """Rows that passed, over every report."""
        return sum(entry.passed for entry in self._entries)

    @property
    def total_failed(self) -> int:
        """Rows that did not pass, over every report."""
        return sum(entry.failed for entry in self._entries)

    @property
    def average_score(self) -> float:
        """100 × passed rows / rows over every report (0.0 without rows).

        Each report weighs as many rows as it holds, as the pooled score of the run store does;
        upstream's unweighted mean of the report scores would disagree with the counts.
        """
        total = self.total_evaluations
        return 100.0 * self.total_passed / total if total else 0.0

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (
            f"<SuiteReport reports={self.total_reports} "
            f"average_score={format_percent(self.average_score)}>"
        )

    def render_markdown(self, *, generated: datetime | None = None) -> str:
        """The Markdown suite report (upstream's layout, "Test" in place of "Test Class")."""
        from ..formatters._registry import render

        return render("suite", "markdown", self, generated=generated)

    def render_json(self, *, generated: datetime | None = None) -> str:
        """The JSON suite report: upstream's keys, ``test`` in place of ``testClass``.

        Each report also carries ``label``, ``errors``, ``tagScores`` and ``outcome``; the
        summary also carries ``partial`` (whether evaluations are missing) and
        ``partialReason``.
        """
        from ..formatters._registry import render

        return render("suite", "json", self, generated=generated)

    def write(
        self, directory: str | PathLike[str], *, generated: datetime | None = None
    ) -> list[Path]:
        """Write ``evaluation-suite-report.md`` and ``.json`` into ``directory``.

        This is synchronous, for pytest's session hooks; nothing is written without entries
        unless the suite is partial.

        Returns:
            The paths written.
        """
        if not self._entries and self.partial is None:
            return []
        when = generated if generated is not None else datetime.now(UTC)
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        markdown = target / f"{SUITE_REPORT_NAME}.md"
        write_atomic(markdown, self.render_markdown(generated=when))
        json_path = target / f"{SUITE_REPORT_NAME}.json"
        write_atomic(json_path, self.render_json(generated=when))
        return [markdown, json_path]
