"""Recording each test's evaluations, writing their reports and the session's suite report."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .._exceptions import StoreError
from .._files import write_atomic
from .._numbers import format_percent
from .._report import EvaluationReport
from .._scorer import FunctionUnderTest, SampleSource, Scorer
from ._baseline import BaselineCheck
from ._config import Settings, fail, scorer_options
from ._suite import SuiteEntry, SuiteReport

__all__ = [
    "BASELINE_OUTPUT_KEY",
    "DEFAULT_FORMATS",
    "EvaluationRecorder",
    "EvaluationSession",
    "ItemRecords",
    "RecordingScorer",
    "STORED_OUTPUT_KEY",
    "WORKER_OUTPUT_KEY",
    "record_outcome",
    "records_for",
    "report_file_stem",
    "scorer_for",
]

DEFAULT_FORMATS = ("markdown", "json")
FALLBACK_REPORT_DIR = Path("target", "evaluation-reports")
WORKER_OUTPUT_KEY = "aeval_entries"
BASELINE_OUTPUT_KEY = "aeval_baseline_rows"
STORED_OUTPUT_KEY = "aeval_stored"

_SHOWN_FAILURES = 10
_SHOWN_RUNS = 20
_STEM_LIMIT = 120


class _Record:
    __slots__ = ("formats", "label", "report")

    def __init__(
        self, report: EvaluationReport, label: str | None, formats: tuple[str, ...] | None
    ) -> None:
        self.report = report
        self.label = label
        self.formats = formats


class ItemRecords:
    """The evaluation reports one test recorded, in order."""

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: list[_Record] = []

    def add(
        self,
        report: EvaluationReport,
        *,
        label: str | None = None,
        formats: Sequence[str] | None = None,
    ) -> int:
        """Record ``report``; returns its position, for :meth:`replace`.

        Without a label, every report after the first is labelled ``#<position>``.
        """
        if label is None and self._records:
            label = f"#{len(self._records) + 1}"
        self._records.append(_Record(report, label, None if formats is None else tuple(formats)))
        return len(self._records) - 1

    def replace(self, position: int, report: EvaluationReport) -> None:
        """Replace the report recorded at ``position`` (a report that grows during the test)."""
        self._records[position].report = report

    def __iter__(self) -> Iterator[_Record]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


_RECORDS_KEY = pytest.StashKey[ItemRecords]()
_OUTCOME_KEY = pytest.StashKey[str]()


def records_for(item: pytest.Item) -> ItemRecords:
    """The records of ``item``, created on first use."""
    records = item.stash.get(_RECORDS_KEY, None)
    if records is None:
        records = item.stash[_RECORDS_KEY] = ItemRecords()
    return records


def record_outcome(item: pytest.Item, report: pytest.TestReport) -> None:
    """Remember the test's outcome: the call's, or the setup's when setup did not pass."""
    if report.when == "call" or (report.when == "setup" and not report.passed):
        item.stash[_OUTCOME_KEY] = report.outcome


class EvaluationRecorder:
    """Adds reports to the terminal summary and the suite report (the ``record_evaluation``
    fixture).

    Example:
        >>> def test_bot(record_evaluation):  # doctest: +SKIP
        ...     report = evaluate_sync(samples, bot, ExactMatchStrategy())
        ...     record_evaluation(report, label="exact")
    """

    __slots__ = ("_records",)

    def __init__(self, records: ItemRecords) -> None:
        self._records = records

    def __call__(self, report: EvaluationReport, *, label: str | None = None) -> EvaluationReport:
        """Record ``report`` for this test and return it.

        Args:
            report: The report to show.
            label: Tells this report apart from the test's others in the summary and in the
                report file names.
        """
        if not isinstance(report, EvaluationReport):
            raise TypeError(f"record_evaluation takes an EvaluationReport, got {report!r}")
        self._records.add(report, label=label)
        return report


class RecordingScorer(Scorer):
    """A Scorer that records every report it returns for the test using it."""

    def __init__(
        self,
        concurrency: int = 1,
        *,
        records: ItemRecords,
        formats: Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(concurrency, **options)
        self._records = records
        self._formats = formats

    async def evaluate(
        self, samples: SampleSource, function: FunctionUnderTest, *strategies: object
    ) -> EvaluationReport:
        """Evaluate as :meth:`Scorer.evaluate` does, and record the report for the test."""
        report = await super().evaluate(samples, function, *strategies)
        self._records.add(report, formats=self._formats)
        return report


def scorer_for(
    item: pytest.Item, settings: Settings, *, formats: Sequence[str] | None = None
) -> RecordingScorer:
    """A recording Scorer configured by the item's ``scorer`` marker and the ini default."""
    try:
        options = scorer_options(item.get_closest_marker("scorer"), settings.concurrency)
        return RecordingScorer(records=records_for(item), formats=formats, **options)
    except (TypeError, ValueError) as exc:
        fail(f"@pytest.mark.scorer on {item.name}: {exc}")


def report_file_stem(test_id: str, label: str | None = None) -> str:
    """A file name for a test's report: the node id with unsafe characters replaced.

    ``tests/test_bot.py::test_faq[exact]`` gives ``tests_test_bot.py_test_faq_exact``, and with
    the label ``#2`` ``tests_test_bot.py_test_faq_exact-2``; a very long id is cut and given a
    short hash so that names stay unique.
    """
    name = test_id if label is None else f"{test_id}-{label}"
    stem = _clean(test_id) or "report"
    if label is not None:
        stem = f"{stem}-{_clean(label) or 'report'}"
    if len(stem) > _STEM_LIMIT:
        digest = hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:10]
        stem = f"{stem[: _STEM_LIMIT - 11]}-{digest}"
    return stem


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")


class _Recorder:
    """Records each evaluation as a run in the run store (``--aeval-store``)."""

    def __init__(self, path: Path) -> None:
        from .._store._database import RunDatabase

        self.path = path
        self.database = RunDatabase(path)
        try:
            self.database.check()
        except StoreError as exc:
            raise pytest.UsageError(f"--aeval-store: {exc}") from None
        self.stored: list[tuple[str, str]] = []
        self.warnings: list[str] = []
        self._dirty: tuple[bool | None] | None = None

    def _git_dirty(self) -> bool | None:
        if self._dirty is None:
            from .._store._git import git_dirty

            self._dirty = (git_dirty(),)
        return self._dirty[0]

    def record(self, name: str, report: EvaluationReport) -> None:
        from .._store._database import RunStart

        if not report.holds_all_rows:
            self.warnings.append(
                f"{name}: not stored: its report holds only some of its rows (keep="
                "'failures' or 'none'); the store keeps every row"
            )
            return
        dirty = self._git_dirty() if report.run.git_commit is not None else None
        try:
            run_id = self.database.save(report, RunStart(name, report.run, git_dirty=dirty))
        except StoreError as exc:
            self.warnings.append(f"{name}: not stored: {exc}")
            return
        self.stored.append((run_id, name))

    def output(self) -> dict[str, list[Any]]:
        return {"stored": [list(item) for item in self.stored], "warnings": self.warnings}

    def absorb(self, data: dict[str, list[Any]]) -> None:
        self.stored += [(run_id, name) for run_id, name in data.get("stored", ())]
        self.warnings += data.get("warnings", ())

    def lines(self) -> list[str]:
        lines = [f"aeval: {warning}" for warning in self.warnings]
        if not self.stored:
            return lines
        lines.append(
            f"Stored {len(self.stored)} run(s) in {self.path} (aeval runs --store {self.path}):"
        )
        for run_id, name in sorted(self.stored, key=lambda item: item[1])[:_SHOWN_RUNS]:
            lines.append(f"    {run_id}  {name}")
        if len(self.stored) > _SHOWN_RUNS:
            lines.append(f"    ... and {len(self.stored) - _SHOWN_RUNS} more")
        return lines


class EvaluationSession:
    """Collects the session's evaluations: per-test files, suite report, summary, min score,
    and the runs recorded in the run store."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self._config = config
        self._settings = settings
        self._entries: list[SuiteEntry] = []
        self._from_workers = False
        self._written: list[Path] = []
        self._verdict: str | None = None
        worker = hasattr(config, "workerinput")
        self._baseline = (
            BaselineCheck.collecting(settings) if worker else BaselineCheck.load(settings)
        )
        self._recorder = _Recorder(settings.store) if settings.store is not None else None

    @property
    def entries(self) -> list[SuiteEntry]:
        """The entries so far (sorted by test id when they came from xdist workers)."""
        if self._from_workers:
            return sorted(self._entries, key=lambda entry: entry.test_id)
        return list(self._entries)

    def finish_item(self, item: pytest.Item) -> None:
        """Turn the test's records into entries and write its report files."""
        records = item.stash.get(_RECORDS_KEY, None)
        if not records:
            return
        outcome = item.stash.get(_OUTCOME_KEY, None)
        for record in records:
            if self._baseline is not None:
                self._baseline.add_report(item.nodeid, record.report)
            entry = SuiteEntry.from_report(
                item.nodeid, record.report, label=record.label, outcome=outcome
            )
            self._entries.append(entry)
            self._write_report(item.nodeid, record)
            if self._recorder is not None:
                self._recorder.record(entry.name, record.report)

    def _write_report(self, test_id: str, record: _Record) -> None:
        from ..formatters import get_formatter

        directory = self._settings.report_dir
        if directory is None:
            if not record.formats:
                return
            directory = self._config.rootpath / FALLBACK_REPORT_DIR
        formats = record.formats or DEFAULT_FORMATS
        stem = report_file_stem(test_id, record.label)
        directory.mkdir(parents=True, exist_ok=True)
        for name in formats:
            formatter = get_formatter(name)
            content = formatter.format(record.report)
            write_atomic(directory / f"{stem}{formatter.extension}", content)

    def worker_output(self) -> list[dict[str, Any]]:
        """The entries as plain data, for an xdist worker's ``workeroutput``."""
        return [entry.to_dict() for entry in self._entries]

    def baseline_output(self) -> dict[str, Any] | None:
        """The rows gathered for ``--aeval-baseline``, for a worker's ``workeroutput``."""
        return self._baseline.worker_output() if self._baseline is not None else None

    def add_baseline_output(self, data: dict[str, Any] | None) -> None:
        """Gather the rows a worker sent for ``--aeval-baseline`` (on the controller)."""
        if data and self._baseline is not None:
            self._baseline.add_worker_output(data)

    def stored_output(self) -> dict[str, list[Any]]:
        """The runs a worker stored, as plain data for its ``workeroutput``."""
        return self._recorder.output() if self._recorder is not None else {}

    def add_worker_stored(self, data: dict[str, list[Any]]) -> None:
        """Merge the runs a worker stored (on the xdist controller)."""
        if self._recorder is not None:
            self._recorder.absorb(data)

    def close(self) -> None:
        """Close the run store's connection."""
        if self._recorder is not None:
            self._recorder.database.close()

    def add_worker_entries(self, data: Sequence[dict[str, Any]]) -> None:
        """Merge the entries a worker sent (on the xdist controller)."""
        self._from_workers = True
        self._entries.extend(SuiteEntry.from_dict(item) for item in data)

    def suite(self) -> SuiteReport:
        """The suite report over every entry."""
        return SuiteReport(self.entries)

    def finish(self, session: pytest.Session) -> None:
        """Write the suite report, apply ``--aeval-min-score`` and compare with
        ``--aeval-baseline`` (controller only)."""
        regressed = self._baseline is not None and self._baseline.finish()
        if regressed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        suite = self.suite()
        if self._settings.report_dir is not None:
            self._written = suite.write(self._settings.report_dir)
        minimum = self._settings.min_score
        if minimum is None:
            return
        if not suite.entries:
            self._verdict = (
                f"--aeval-min-score {format_percent(minimum)} was not checked: no evaluation ran"
            )
            return
        if suite.average_score < minimum:
            self._verdict = (
                f"FAILED: the suite's average score {format_percent(suite.average_score)} is "
                f"below --aeval-min-score {format_percent(minimum)}"
            )
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            self._verdict = (
                f"The suite's average score {format_percent(suite.average_score)} meets "
                f"--aeval-min-score {format_percent(minimum)}"
            )

    def terminal_lines(self) -> list[str]:
        """The lines of the "aeval evaluations" terminal section (empty when nothing ran)."""
        suite = self.suite()
        lines: list[str] = []
        for entry in suite.entries:
            lines.append(entry.describe())
            for failure in entry.failures[:_SHOWN_FAILURES]:
                lines.append(f"    - {failure.describe()}")
            hidden = entry.failed - min(len(entry.failures), _SHOWN_FAILURES)
            if hidden > 0:
                lines.append(f"    ... and {hidden} more not shown")
        if suite.entries:
            lines.append(
                f"Suite: {suite.total_reports} report(s), {suite.total_passed}/"
                f"{suite.total_evaluations} evaluations passed, average score "
                f"{format_percent(suite.average_score)}"
            )
        if self._written:
            lines.append(f"Suite report written to {self._written[0].parent}")
        if self._recorder is not None:
            lines += self._recorder.lines()
        if self._verdict is not None:
            lines.append(self._verdict)
        if self._baseline is not None:
            lines += self._baseline.lines
        return lines
