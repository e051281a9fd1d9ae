"""Recording each test's evaluations, writing their reports and the session's suite report."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from .._engine._scorer import FunctionUnderTest, SampleSource, Scorer
from .._exceptions import StoreError
from .._reporting._report import EvaluationReport
from .._util._files import write_atomic
from .._util._numbers import format_percent
from ._baseline import BaselineCheck
from ._config import Settings, fail, scorer_options
from ._suite import SuiteEntry, SuiteReport

__all__ = [
    "DEFAULT_FORMATS",
    "PAYLOAD_ATTRIBUTE",
    "EvaluationRecorder",
    "EvaluationSession",
    "ItemRecords",
    "RecordingScorer",
    "record_outcome",
    "records_for",
    "report_file_stem",
    "scorer_for",
]

DEFAULT_FORMATS = ("markdown", "json")
PAYLOAD_ATTRIBUTE = "aeval_evaluations"
"""The attribute of a worker's teardown report that carries what the test recorded."""
FALLBACK_REPORT_DIR = Path("target", "evaluation-reports")

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
_PAYLOAD_KEY = pytest.StashKey[dict[str, Any]]()
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
    """Records each evaluation as a run in the run store (``--aeval-store``).

    The first time the store stays locked for the lock timeout, storing stops for the rest of
    the session (on this process) with one warning, rather than waiting again for each
    evaluation.
    """

    def __init__(self, path: Path, *, lock_timeout: float, probe: bool) -> None:
        from .._store._database import RunDatabase

        self.path = path
        self.database = RunDatabase(path, timeout=lock_timeout)
        try:
            self.database.check()
            if probe:
                _check_unlocked(path, lock_timeout)
        except StoreError as exc:
            self.database.close()
            raise pytest.UsageError(f"--aeval-store: {exc}") from None
        self.stored: list[tuple[str, str]] = []
        self.warnings: list[str] = []
        self._dirty: tuple[bool | None] | None = None
        self._locked = False

    def _git_dirty(self) -> bool | None:
        if self._dirty is None:
            from .._store._git import git_dirty

            self._dirty = (git_dirty(),)
        return self._dirty[0]

    def record(self, name: str, report: EvaluationReport) -> None:
        from .._store._database import RunStart

        if self._locked:
            return
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
            later = ""
            if _is_lock_timeout(exc):
                self._locked = True
                later = "; the later evaluations of this session are not stored either (no "
                later += "further wait)"
            self.warnings.append(f"{name}: not stored: {exc}{later}")
            return
        self.stored.append((run_id, name))

    def output(self, *, since: tuple[int, int] = (0, 0)) -> dict[str, list[Any]]:
        """The runs stored and the warnings after the counts ``since``, as plain data."""
        stored, warned = since
        return {
            "stored": [list(item) for item in self.stored[stored:]],
            "warnings": self.warnings[warned:],
        }

    @property
    def counts(self) -> tuple[int, int]:
        """How many runs were stored and warnings given so far (for :meth:`output`)."""
        return (len(self.stored), len(self.warnings))

    def absorb(self, data: Mapping[str, Sequence[Any]]) -> None:
        self.stored += [(run_id, name) for run_id, name in data.get("stored", ())]
        self.warnings += [str(warning) for warning in data.get("warnings", ())]

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


def _is_lock_timeout(exc: StoreError) -> bool:
    from .._store._schema import is_locked

    cause = exc.__cause__
    return cause is not None and is_locked(cause)


def _check_unlocked(path: Path, timeout: float) -> None:
    """Take and release the store's write lock once, so that a locked store is reported
    before any test runs (other problems are left to the first save, which reports them)."""
    import sqlite3

    from .._store._schema import is_locked

    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if not is_locked(exc):
            return
        raise StoreError(
            f"{path}: the run store stayed locked for {timeout:g} s (ini "
            "aeval_store_lock_timeout): another process holds a write transaction on it (a "
            "SQLite browser with unsaved changes?); close it and run again",
            path=path,
        ) from exc
    finally:
        connection.close()


class EvaluationSession:
    """Collects the session's evaluations: per-test files, suite report, summary, min score,
    and the runs recorded in the run store.

    Under pytest-xdist a worker attaches what each test recorded to the test's teardown
    report (:data:`PAYLOAD_ATTRIBUTE`), which reaches the controller as the test ends, so that
    a worker that crashes later loses nothing it finished. A crashed worker marks the suite
    partial.
    """

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self._config = config
        self._settings = settings
        self._entries: list[SuiteEntry] = []
        self._from_workers = False
        self._written: list[Path] = []
        self._verdict: str | None = None
        self._lost_workers: list[str] = []
        self._crashed_tests: list[str] = []
        self._worker = hasattr(config, "workerinput")
        self._baseline = (
            BaselineCheck.collecting(settings) if self._worker else BaselineCheck.load(settings)
        )
        self._recorder = (
            _Recorder(
                settings.store, lock_timeout=settings.store_lock_timeout, probe=not self._worker
            )
            if settings.store is not None
            else None
        )

    @property
    def entries(self) -> list[SuiteEntry]:
        """The entries so far (sorted by test id when they came from xdist workers)."""
        if self._from_workers:
            return sorted(self._entries, key=lambda entry: entry.test_id)
        return list(self._entries)

    def finish_item(self, item: pytest.Item) -> None:
        """Turn the test's records into entries and write its report files.

        On an xdist worker, what the test recorded is kept for :meth:`payload`.
        """
        records = item.stash.get(_RECORDS_KEY, None)
        if not records:
            return
        outcome = item.stash.get(_OUTCOME_KEY, None)
        baseline = BaselineCheck.collecting(self._settings) if self._worker else self._baseline
        counts = self._recorder.counts if self._recorder is not None else (0, 0)
        entries = []
        for record in records:
            if baseline is not None:
                baseline.add_report(item.nodeid, record.report)
            entry = SuiteEntry.from_report(
                item.nodeid, record.report, label=record.label, outcome=outcome
            )
            entries.append(entry)
            self._write_report(item.nodeid, record)
            if self._recorder is not None:
                self._recorder.record(entry.name, record.report)
        self._entries += entries
        if self._worker:
            item.stash[_PAYLOAD_KEY] = {
                "entries": [entry.to_dict() for entry in entries],
                "baseline": None if baseline is None else baseline.worker_output(),
                "stored": {} if self._recorder is None else self._recorder.output(since=counts),
            }

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

    @staticmethod
    def payload(item: pytest.Item) -> dict[str, Any] | None:
        """What a worker's test recorded, as plain data for its teardown report."""
        return item.stash.get(_PAYLOAD_KEY, None)

    def absorb(self, payload: Mapping[str, Any]) -> None:
        """Merge what a worker's test recorded (on the xdist controller)."""
        self._from_workers = True
        self._entries.extend(SuiteEntry.from_dict(item) for item in payload.get("entries", ()))
        baseline = payload.get("baseline")
        if baseline and self._baseline is not None:
            self._baseline.add_worker_output(baseline)
        if self._recorder is not None:
            self._recorder.absorb(payload.get("stored") or {})

    def worker_lost(self, worker: str, error: object) -> None:
        """Note that an xdist worker went down before it finished (on the controller)."""
        self._lost_workers.append(f"{worker} ({error})")

    def test_crashed(self, test_id: str) -> None:
        """Note the test a crashed worker was running (on the controller)."""
        self._crashed_tests.append(test_id)

    def close(self) -> None:
        """Close the run store's connection."""
        if self._recorder is not None:
            self._recorder.database.close()

    def suite(self) -> SuiteReport:
        """The suite report over every entry."""
        return SuiteReport(self.entries, partial=self._partial())

    def _partial(self) -> str | None:
        if not self._lost_workers and not self._crashed_tests:
            return None
        workers = ", ".join(self._lost_workers) or "a worker"
        running = f" while running {', '.join(self._crashed_tests)}" if self._crashed_tests else ""
        return (
            f"pytest-xdist worker {workers} crashed{running}; the evaluations it had not "
            "finished are missing"
        )

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
        if not suite.entries and suite.partial is None:
            self._verdict = (
                f"--aeval-min-score {format_percent(minimum)} was not checked: no evaluation ran"
            )
            return
        if suite.partial is not None:
            self._verdict = (
                f"FAILED: --aeval-min-score {format_percent(minimum)} cannot be checked: the "
                f"suite is partial; the average score of the evaluations that finished is "
                f"{format_percent(suite.average_score)}"
            )
        elif suite.average_score < minimum:
            self._verdict = (
                f"FAILED: the suite's average score {format_percent(suite.average_score)} is "
                f"below --aeval-min-score {format_percent(minimum)}"
            )
        else:
            self._verdict = (
                f"The suite's average score {format_percent(suite.average_score)} meets "
                f"--aeval-min-score {format_percent(minimum)}"
            )
            return
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

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
        if suite.partial is not None:
            lines.append(f"Partial suite: {suite.partial}")
        if self._written:
            lines.append(f"Suite report written to {self._written[0].parent}")
        if self._recorder is not None:
            lines += self._recorder.lines()
        if self._verdict is not None:
            lines.append(self._verdict)
        if self._baseline is not None:
            lines += self._baseline.lines
            if self._baseline.lines and suite.partial is not None:
                lines.append("  warning: the comparison lacks the crashed worker's evaluations")
        return lines
