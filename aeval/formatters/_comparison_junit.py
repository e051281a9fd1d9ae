"""The comparison as JUnit XML, so CI systems show a regression as a failing test.

One ``<testsuite name="aeval compare">`` with the comparison's figures as ``<properties>`` and
one ``<testcase>`` per scope: ``overall`` and ``tag <name>`` (classname ``aeval.compare``).
A scope that is significantly worse than the baseline by more than the margin carries
``<failure type="regression">`` whose message gives the scores, the difference with its
interval and the p-value (Holm-adjusted for a tag), and whose text lists the regressed
pairs. With a non-inferiority margin, one more case, ``non-inferiority``, fails unless the
low end of the overall interval is above minus the margin.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .._compare._comparison import Comparison
from .._compare._gates import non_inferiority_message, regression_message
from .._display import display_value
from .._util._numbers import format_number, truncate
from ._escape import xml_message, xml_text

__all__ = ["render_junit"]

_PAIRS_LISTED = 50


def _properties(c: Comparison, margin: float) -> list[tuple[str, str]]:
    low, high = c.interval
    items = [
        ("baseline", c.baseline_label),
        ("candidate", c.candidate_label),
        ("baseline_score", format_number(c.baseline_score)),
        ("candidate_score", format_number(c.candidate_score)),
        ("difference", format_number(c.difference)),
        ("difference_low", format_number(low)),
        ("difference_high", format_number(high)),
        ("confidence", f"{c.confidence:g}"),
        ("p_value", f"{c.p_value:.6g}"),
        ("test", c.test),
        ("verdict", c.verdict),
        ("samples", str(c.samples)),
        ("pairs", str(c.pairs)),
        ("regressions", str(len(c.regressions))),
        ("fixes", str(len(c.fixes))),
        ("only_in_baseline", str(len(c.only_in_baseline))),
        ("only_in_candidate", str(len(c.only_in_candidate))),
        ("margin", format_number(margin)),
    ]
    if c.minimum_detectable_effect is not None:
        items.append(("minimum_detectable_effect", format_number(c.minimum_detectable_effect)))
    items += [("warning", warning) for warning in c.warnings]
    return items


def _failure_text(scope: Comparison) -> str:
    lines = [scope.describe(), scope.power_note, "", f"regressions ({len(scope.regressions)}):"]
    for pair in scope.regressions[:_PAIRS_LISTED]:
        lines.append(f"- {pair.describe()}")
        lines.append(f"    baseline:  {truncate(display_value(pair.baseline_output), 200)}")
        lines.append(f"    candidate: {truncate(display_value(pair.candidate_output), 200)}")
    if len(scope.regressions) > _PAIRS_LISTED:
        lines.append(f"... and {len(scope.regressions) - _PAIRS_LISTED} more")
    return "\n".join(lines)


def render_junit(
    comparison: Comparison, *, margin: float = 0.0, non_inferiority: float | None = None
) -> str:
    """The comparison as JUnit XML (see the module docstring)."""
    c = comparison
    cases: list[tuple[str, tuple[str, str, str] | None, str]] = []
    for scope in (c, *c.tag_comparisons.values()):
        failure = None
        if scope.is_significant_regression(margin):
            failure = ("regression", regression_message(scope, margin), _failure_text(scope))
        cases.append((scope.scope, failure, scope.describe()))
    if non_inferiority is not None:
        failure = None
        if not c.is_non_inferior(non_inferiority):
            message = non_inferiority_message(c, non_inferiority)
            failure = ("non-inferiority", message, c.describe())
        name = f"non-inferiority (margin {format_number(non_inferiority)})"
        cases.append((name, failure, c.describe()))
    failures = sum(failure is not None for _, failure, _ in cases)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "skipped": "0"}
    root = ET.Element("testsuites", {"name": "aeval compare", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "aeval compare", **counts, "time": "0"})
    properties = ET.SubElement(suite, "properties")
    for key, value in _properties(c, margin):
        ET.SubElement(properties, "property", {"name": key, "value": xml_text(value)})
    for name, failure, summary in cases:
        case = ET.SubElement(
            suite, "testcase", {"classname": "aeval.compare", "name": xml_text(name), "time": "0"}
        )
        if failure is not None:
            kind, message, text = failure
            element = ET.SubElement(
                case, "failure", {"type": kind, "message": xml_text(xml_message(message))}
            )
            element.text = xml_text(text)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = xml_text(summary)
    ET.indent(root, space="  ")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{ET.tostring(root, encoding="unicode")}\n'
