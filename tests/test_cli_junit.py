"""The JUnit XML formatter, validated against the JUnit schema in tests/data/cli."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from aeval import EvaluationReport, EvaluationResult, EvaluationRow, EvaluationSample
from aeval._exceptions import FormatError
from aeval._results import ErrorInfo
from aeval.formatters import get_formatter, supported_formats
from aeval.formatters.junit import JunitFormatter

SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parent / "data" / "cli" / "junit.xsd")


def sample(name: str, expected: object = "yes", tags: tuple[str, ...] = ()) -> EvaluationSample:
    return EvaluationSample(name, ["q"], expected, tags=tags)


def rows() -> list[EvaluationRow]:
    greet = sample("greet", tags=("smoke",))
    return [
        EvaluationRow.from_result(
            greet,
            "Exact",
            "yes",
            EvaluationResult.passing(),
            duration=0.25,
            strategy_duration=0.125,
        ),
        EvaluationRow.from_result(
            greet,
            "Judge",
            "yes",
            EvaluationResult.unscored("reply unreadable: 'maybe'"),
            position=1,
        ),
        EvaluationRow.from_result(
            sample("bye", ["bye", "ciao"]),
            "Exact",
            "hello\x1b[31m",
            EvaluationResult.failing(0.2, 'Expected "bye" <or> ciao & more'),
            index=1,
        ),
        EvaluationRow.from_error(
            sample("crash"),
            None,
            None,
            ErrorInfo("TimeoutError", "took too long", "Trace\n  here"),
            index=2,
        ),
        EvaluationRow.from_error(
            sample("judge down"),
            "Judge",
            "x",
            ErrorInfo("ModelHTTPError", "HTTP 500"),
            index=3,
            position=1,
        ),
    ]


def test_junit_is_registered_and_writes_xml() -> None:
    assert "junit" in supported_formats()
    formatter = get_formatter("JUnit")
    assert isinstance(formatter, JunitFormatter)
    assert formatter.extension == ".xml"


def test_one_testcase_per_row_with_failures_errors_and_counts() -> None:
    text = EvaluationReport(rows()).format("junit")

    SCHEMA.validate(text)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    root = ET.fromstring(text)
    suite = root.find("testsuite")
    assert suite is not None
    expected = {"name": "aeval", "tests": "5", "failures": "2", "errors": "2", "skipped": "0"}
    assert {key: suite.get(key) for key in expected} == expected
    assert {key: root.get(key) for key in expected} == expected
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties == {
        "score": "20.00",
        "rows": "5",
        "passed": "1",
        "failed": "1",
        "unscored": "1",
        "errors": "2",
        "tag.smoke": "50.00",
        "strategy.Exact": "50.00",
        "strategy.Judge": "0.00",
    }
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("Exact", "greet"),
        ("Judge", "greet"),
        ("Exact", "bye"),
        ("function", "crash"),
        ("Judge", "judge down"),
    ]
    assert cases[0].get("time") == "0.375"
    assert list(cases[0]) == []

    unscored = cases[1].find("failure")
    assert unscored is not None
    assert (unscored.get("type"), unscored.get("message")) == (
        "unscored",
        "reply unreadable: 'maybe'",
    )
    failure = cases[2].find("failure")
    assert failure is not None
    assert (failure.get("type"), failure.get("message")) == (
        "failed",
        'Expected "bye" <or> ciao & more',
    )
    assert failure.text == (
        "expected: [bye, ciao]\nactual: hello\\x1b[31m\nscore: 0.20\n"
        'explanation: Expected "bye" <or> ciao & more'
    )
    error = cases[3].find("error")
    assert error is not None
    assert (error.get("type"), error.get("message"), error.text) == (
        "TimeoutError",
        "took too long",
        "Trace\n  here",
    )
    strategy_error = cases[4].find("error")
    assert strategy_error is not None
    assert (strategy_error.get("type"), strategy_error.text) == ("ModelHTTPError", "HTTP 500")


def test_repeats_are_named_and_the_suite_name_is_an_option() -> None:
    first = sample("greet")
    report = EvaluationReport(
        EvaluationRow.from_result(first, "Exact", "yes", EvaluationResult.passing(), repeat=r)
        for r in range(2)
    )

    text = report.format("junit", suite_name="nightly & co")

    SCHEMA.validate(text)
    root = ET.fromstring(text)
    assert root.get("name") == "nightly & co"
    assert [c.get("name") for c in root.iter("testcase")] == [
        "greet [repeat 1]",
        "greet [repeat 2]",
    ]


def test_an_empty_report_is_valid_junit() -> None:
    text = JunitFormatter().format(EvaluationReport())
    SCHEMA.validate(text)
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("0", "0", "0")


def test_unknown_options_are_refused() -> None:
    with pytest.raises(FormatError, match="Unknown option 'pretty' for the junit report formatter"):
        JunitFormatter().format(EvaluationReport(), pretty=True)
