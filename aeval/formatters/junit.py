"""The JUnit XML report (``report.xml``), as GitHub Actions, GitLab and Jenkins read it.

Layout: one ``<testsuites>`` holding one ``<testsuite>`` with the run's counts, its
``<properties>`` and one ``<testcase>`` per row of the report:

- ``classname`` is the strategy's name, or ``function`` for the error row of a function
  under test that raised in a run without strategies; ``name`` is the sample's name,
  followed by ``[repeat N]`` when the run repeated samples; ``time`` is the function's
  seconds for that sample plus the strategy's.
- A failed row carries ``<failure type="failed" message="<explanation>">`` whose text
  gives the expected and actual outputs, the score and the explanation.
- An error row carries ``<error type="<exception type>" message="<exception message>">``
  whose text is the traceback when one was kept. When the call of the function under test
  failed, the message says so: ``the call failed; the strategy could not run: <error>``.
- An *unscored* row (a judge reply that could not be read) carries
  ``<failure type="unscored">``: it counts against the score, so CI must not show it green.
- A *skipped* row (a strategy that did not run because a check it depends on failed)
  carries ``<skipped message="<why>">``. It counts as not passed in the score, yet it is
  written as skipped rather than as a failure: it only exists because its prerequisite's
  row did not pass, and that row is a ``<failure>`` or ``<error>`` in the same suite, so the
  suite is red already; a second failure would count one problem twice and blame a check
  that never ran. The ``score`` property counts it as not passed.
- A *not applicable* row (a strategy whose expectation the sample does not state, such as a
  tool check on a sample without ``expected-calls``) carries ``<skipped message="not
  applicable: <which key is missing>">``: it is no failure, and the score leaves it out.
- The test cases of a flaky (sample, strategy) pair, whose repeats disagree, carry
  ``<system-out>flaky: 2/3 repeats passed</system-out>``.
- A partial run (stopped before its last sample) gets one more test case, first:
  classname ``aeval``, named ``run stopped after N of M samples``, with
  ``<error type="partial">`` saying that the scores cover only the samples evaluated, so CI
  never shows a stopped run green.

The suite's ``failures`` counts failed and unscored rows, ``errors`` the error rows and the
partial-run case, ``skipped`` the skipped and the not-applicable rows, and ``tests`` the test
cases written.

Properties: ``score`` and its 95% interval (``score_ci95_low``, ``score_ci95_high``, clustered
by sample), the row counts (``rows``, ``passed``, ``failed``, ``unscored``, ``skipped``,
``not_applicable`` when there are any, ``errors``), ``failed_calls``, ``samples`` and
``samples_expected``, ``complete`` (``true``/``false``), the gate of ``aeval run``/``merge``
when known (``gate``: ``passed``, ``missed`` or ``none``, and one ``gate.<threshold>`` per
threshold, such as ``gate.score`` = ``missed: score 66.67% < 80.00%``), ``rows_held`` when
the report does not hold every row, the run's ``started_at``/``finished_at`` (ISO 8601,
UTC), ``duration`` (seconds), ``aeval_version``,
``concurrency``, ``repeats``, ``git_commit``, ``flaky`` (the flaky pairs, with repeats), one
``warning`` per warning, then ``tag.<tag>`` and ``strategy.<name>`` scores; per strategy whose
samples carry human labels ``calibration.<name>.kappa`` (with ``.kappa_ci95_low`` and
``.kappa_ci95_high``), or ``.kappa_undefined`` with the reason when kappa is undefined,
``.accuracy`` (percent), ``.rows`` and ``.disagreements``; per judge
strategy ``judge.<name>.parse_failure_rate`` and ``.reask_rate`` (percent) and, with several
judges, ``.agreement`` (percent). Properties whose value the report does not know are left
out.

Characters XML 1.0 cannot hold (most control characters, lone surrogates) are written as
``\\xNN`` escapes.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .._display import display_value
from .._reporting._report import partial_note
from .._reporting._results import Outcome
from .._util._numbers import format_number
from ._base import check_options
from ._escape import xml_message as _message, xml_text as _clean
from ._header import partial_banner

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow
    from .._reporting._values import FlakyCase

__all__ = ["JunitFormatter"]

_DEFAULTS: dict[str, Any] = {"suite_name": "aeval"}


def _seconds(value: float) -> str:
    return f"{max(0.0, value):.3f}"


def _utc(value: float) -> str:
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class JunitFormatter:
    """Renders a report as JUnit XML (see the module docstring for the layout).

    Options:
        suite_name (str): The name of the test suite (default ``"aeval"``).
    """

    name: ClassVar[str] = "junit"
    extension: ClassVar[str] = ".xml"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report``.

        Raises:
            FormatError: An unknown option, or ``suite_name`` that is not a string.
        """
        import xml.etree.ElementTree as ET  # loaded by the first JUnit report

        suite_name: str = check_options(self.name, options, _DEFAULTS)["suite_name"]
        rows = report.evaluations
        repeated = report.run.repeats > 1 or any(row.repeat for row in rows)
        partial = partial_note(report)
        outcomes = Counter(row.outcome for row in rows)
        counts = {
            "tests": str(len(rows) + (partial is not None)),
            "failures": str(outcomes[Outcome.FAILED] + outcomes[Outcome.UNSCORED]),
            "errors": str(outcomes[Outcome.ERROR] + (partial is not None)),
            "skipped": str(outcomes[Outcome.SKIPPED] + outcomes[Outcome.NOT_APPLICABLE]),
        }
        if report.duration is not None:
            counts["time"] = _seconds(report.duration)
        root = ET.Element("testsuites", {"name": _clean(suite_name), **counts})
        suite = ET.SubElement(root, "testsuite", {"name": _clean(suite_name), **counts})
        if report.started_at is not None:
            started = datetime.fromtimestamp(report.started_at, UTC)
            suite.set("timestamp", started.strftime("%Y-%m-%dT%H:%M:%S"))
        properties = ET.SubElement(suite, "properties")
        for key, value in self._properties(report):
            ET.SubElement(properties, "property", {"name": _clean(key), "value": _clean(value)})
        if partial is not None:
            self._partial_case(suite, partial, partial_banner(report) or partial)
        flaky = {(case.sample, case.strategy): case for case in report.flaky}
        for row in rows:
            self._testcase(suite, row, repeated, flaky.get((row.name, row.strategy)))
        ET.indent(root, space="  ")
        body = ET.tostring(root, encoding="unicode")
        return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'

    @staticmethod
    def _properties(report: EvaluationReport) -> list[tuple[str, str]]:
        run = report.run
        low, high = report.confidence_interval()
        items = [
            ("score", format_number(report.score)),
            ("score_ci95_low", format_number(low)),
            ("score_ci95_high", format_number(high)),
            ("rows", str(report.evaluation_count)),
            ("passed", str(report.passed_count)),
            ("failed", str(report.failed_count)),
            ("unscored", str(report.unscored_count)),
            ("skipped", str(report.skipped_count)),
            ("errors", str(report.error_count)),
            ("failed_calls", str(report.function_error_count)),
            ("samples", str(report.sample_count)),
        ]
        if report.not_applicable_count:
            items.insert(8, ("not_applicable", str(report.not_applicable_count)))
        if report.samples_expected is not None:
            items.append(("samples_expected", str(report.samples_expected)))
        items.append(("complete", "true" if report.complete else "false"))
        if run.gate is not None:
            items.append(("gate", run.gate.verdict))
            for check in run.gate.checks:
                state = {True: "met", False: "missed", None: "not checked"}[check.passed]
                items.append((f"gate.{check.name.replace(' ', '.')}", f"{state}: {check.text}"))
        if not report.holds_all_rows:
            items.append(("rows_held", str(len(report.evaluations))))
        if run.started_at is not None:
            items.append(("started_at", _utc(run.started_at)))
        if run.finished_at is not None:
            items.append(("finished_at", _utc(run.finished_at)))
        if report.duration is not None:
            items.append(("duration", _seconds(report.duration)))
        if run.aeval_version:
            items.append(("aeval_version", run.aeval_version))
        if run.concurrency is not None:
            items.append(("concurrency", str(run.concurrency)))
        items.append(("repeats", str(run.repeats)))
        if run.git_commit:
            items.append(("git_commit", run.git_commit))
        if report.repeat_statistics is not None:
            items.append(("flaky", str(len(report.flaky))))
        usage = report.usage
        if usage.retries or usage.total_tokens or usage.cost:
            items += [
                ("model_retries", str(usage.retries)),
                ("model_prompt_tokens", str(usage.prompt_tokens)),
                ("model_completion_tokens", str(usage.completion_tokens)),
                ("model_cost_usd", f"{usage.cost:.6f}"),
            ]
        items += [("warning", warning) for warning in report.warnings]
        items += [(f"tag.{tag}", format_number(s)) for tag, s in report.tag_scores.items()]
        items += [
            (f"strategy.{name}", format_number(s)) for name, s in report.strategy_scores.items()
        ]
        for name, calibration in report.calibration.items():
            key = f"calibration.{name}"
            stats = calibration.statistics
            if stats is not None:
                low, high = stats.interval()
                items += [
                    (f"{key}.kappa", f"{stats.kappa:.4f}"),
                    (f"{key}.kappa_ci95_low", f"{low:.4f}"),
                    (f"{key}.kappa_ci95_high", f"{high:.4f}"),
                ]
            else:
                items.append((f"{key}.kappa_undefined", str(calibration.kappa_undefined)))
            if calibration.accuracy is not None:
                items.append((f"{key}.accuracy", format_number(100 * calibration.accuracy)))
            items += [
                (f"{key}.rows", str(calibration.rows)),
                (f"{key}.disagreements", str(len(calibration.disagreements))),
            ]
        for name, judging in report.judge_statistics.items():
            rates = (
                ("parse_failure_rate", judging.parse_failure_rate),
                ("reask_rate", judging.reask_rate),
                ("agreement", judging.agreement),
            )
            items += [
                (f"judge.{name}.{label}", format_number(100 * value))
                for label, value in rates
                if value is not None
            ]
        return items

    @staticmethod
    def _partial_case(suite: ET.Element, note: str, banner: str) -> None:
        import xml.etree.ElementTree as ET

        case = ET.SubElement(
            suite, "testcase", {"classname": "aeval", "name": _clean(note), "time": "0.000"}
        )
        element = ET.SubElement(case, "error", {"type": "partial", "message": _clean(banner)})
        element.text = _clean(banner)

    @staticmethod
    def _testcase(
        suite: ET.Element, row: EvaluationRow, repeated: bool, flaky: FlakyCase | None
    ) -> None:
        import xml.etree.ElementTree as ET

        name = row.name if not repeated else f"{row.name} [repeat {row.repeat + 1}]"
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": _clean(row.strategy or "function"),
                "name": _clean(name),
                "time": _seconds(row.duration + row.strategy_duration),
            },
        )
        _verdict(case, row)
        if flaky is not None:
            note = ET.SubElement(case, "system-out")
            note.text = f"flaky: {flaky.passed}/{flaky.runs} repeats passed"


def _verdict(case: ET.Element, row: EvaluationRow) -> None:
    import xml.etree.ElementTree as ET

    outcome = row.outcome
    if outcome is Outcome.PASSED:
        return
    if outcome is Outcome.SKIPPED:
        why = row.explanation or "not run: a check it depends on failed"
        ET.SubElement(case, "skipped", {"message": _clean(_message(why))})
        return
    if outcome is Outcome.NOT_APPLICABLE:
        why = row.explanation or "the sample states no expectation for this check"
        ET.SubElement(case, "skipped", {"message": _clean(_message(f"not applicable: {why}"))})
        return
    if outcome is Outcome.ERROR:
        error = row.error
        kind = error.type if error is not None else "Error"
        message = error.message if error is not None else (row.explanation or "")
        if error is not None and row.function_failed and row.strategy is not None:
            message = f"the call failed; the strategy could not run: {error}"
        element = ET.SubElement(
            case, "error", {"type": _clean(kind), "message": _clean(_message(message))}
        )
        detail = (error.traceback if error is not None else None) or message
        element.text = _clean(detail)
        return
    explanation = row.explanation or ""
    unscored = outcome is Outcome.UNSCORED
    score = "unscored" if row.score is None else format_number(row.score)
    element = ET.SubElement(
        case,
        "failure",
        {
            "type": "unscored" if unscored else "failed",
            "message": _clean(_message(explanation or f"{outcome.value}")),
        },
    )
    element.text = _clean(
        f"expected: {display_value(row.expected_output)}\n"
        f"actual: {display_value(row.output)}\n"
        f"score: {score}\n"
        f"explanation: {explanation}"
    )
