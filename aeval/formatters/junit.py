"""The JUnit XML report (``report.xml``), as GitHub Actions, GitLab and Jenkins read it.

Layout: one ``<testsuites>`` holding one ``<testsuite>`` with the run's counts, its
``<properties>`` (global score, score per tag and per strategy) and one ``<testcase>`` per
row of the report:

- ``classname`` is the strategy's name, or ``function`` for the error row of a function
  under test that raised; ``name`` is the sample's name, followed by ``[repeat N]`` when
  the run repeated samples; ``time`` is the function's seconds for that sample plus the
  strategy's.
- A failed row carries ``<failure type="failed" message="<explanation>">`` whose text
  gives the expected and actual outputs, the score and the explanation.
- An error row carries ``<error type="<exception type>" message="<exception message>">``
  whose text is the traceback when one was kept.
- An *unscored* row (a judge reply that could not be read) carries
  ``<failure type="unscored">``: it counts against the score, so CI must not show it green;
  ``<skipped>`` would. No row is ever skipped.

The suite's ``failures`` counts failed and unscored rows, ``errors`` the error rows, and
``tests`` the test cases written. Characters XML 1.0 cannot hold (most control characters)
are written as ``\\xNN`` escapes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .._numbers import format_number
from .._results import Outcome
from ._base import check_options
from ._values import display_value

if TYPE_CHECKING:
    from .._report import EvaluationReport
    from .._results import EvaluationRow

__all__ = ["JunitFormatter"]

_DEFAULTS: dict[str, Any] = {"suite_name": "aeval"}
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_MESSAGE_LENGTH = 500


def _clean(text: str) -> str:
    return _INVALID.sub(lambda match: f"\\x{ord(match.group(0)):02x}", text)


def _message(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MESSAGE_LENGTH else line[: _MESSAGE_LENGTH - 3] + "..."


def _seconds(value: float) -> str:
    return f"{max(0.0, value):.3f}"


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
        suite_name: str = check_options(self.name, options, _DEFAULTS)["suite_name"]
        rows = report.evaluations
        repeated = any(row.repeat for row in rows)
        failures = sum(row.outcome in (Outcome.FAILED, Outcome.UNSCORED) for row in rows)
        errors = sum(row.outcome is Outcome.ERROR for row in rows)
        counts = {
            "tests": str(len(rows)),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": "0",
            "time": _seconds(report.duration),
        }
        root = ET.Element("testsuites", {"name": _clean(suite_name), **counts})
        suite = ET.SubElement(root, "testsuite", {"name": _clean(suite_name), **counts})
        if report.started_at is not None:
            started = datetime.fromtimestamp(report.started_at, UTC)
            suite.set("timestamp", started.strftime("%Y-%m-%dT%H:%M:%S"))
        properties = ET.SubElement(suite, "properties")
        for key, value in self._properties(report):
            ET.SubElement(properties, "property", {"name": _clean(key), "value": _clean(value)})
        for row in rows:
            self._testcase(suite, row, repeated)
        ET.indent(root, space="  ")
        body = ET.tostring(root, encoding="unicode")
        return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'

    @staticmethod
    def _properties(report: EvaluationReport) -> list[tuple[str, str]]:
        items = [
            ("score", format_number(report.score)),
            ("rows", str(report.evaluation_count)),
            ("passed", str(report.passed_count)),
            ("failed", str(report.failed_count)),
            ("unscored", str(report.unscored_count)),
            ("errors", str(report.error_count)),
        ]
        if not report.holds_all_rows:
            items.append(("complete", "false"))
        items += [(f"tag.{tag}", format_number(s)) for tag, s in report.tag_scores.items()]
        items += [
            (f"strategy.{name}", format_number(s)) for name, s in report.strategy_scores.items()
        ]
        return items

    @staticmethod
    def _testcase(suite: ET.Element, row: EvaluationRow, repeated: bool) -> None:
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
        if row.outcome is Outcome.PASSED:
            return
        if row.outcome is Outcome.ERROR:
            error = row.error
            kind = error.type if error is not None else "Error"
            message = error.message if error is not None else (row.explanation or "")
            element = ET.SubElement(
                case, "error", {"type": _clean(kind), "message": _clean(_message(message))}
            )
            detail = (error.traceback if error is not None else None) or message
            element.text = _clean(detail)
            return
        explanation = row.explanation or ""
        unscored = row.outcome is Outcome.UNSCORED
        score = "unscored" if row.score is None else format_number(row.score)
        element = ET.SubElement(
            case,
            "failure",
            {
                "type": "unscored" if unscored else "failed",
                "message": _clean(_message(explanation or f"{row.outcome.value}")),
            },
        )
        element.text = _clean(
            f"expected: {display_value(row.expected_output)}\n"
            f"actual: {display_value(row.output)}\n"
            f"score: {score}\n"
            f"explanation: {explanation}"
        )
