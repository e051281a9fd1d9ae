"""The JUnit XML formatter, validated against the JUnit schema in tests/data/cli."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    FormatError,
    Outcome,
    RunInfo,
    evaluate_sync,
)
from aeval.formatters import get_formatter, supported_formats
from aeval.formatters.junit import JunitFormatter
from aeval.strategies import ExactMatchStrategy

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
        "score_ci95_low": "3.62",
        "score_ci95_high": "62.45",
        "rows": "5",
        "passed": "1",
        "failed": "1",
        "unscored": "1",
        "skipped": "0",
        "errors": "2",
        "failed_calls": "1",
        "samples": "4",
        "complete": "true",
        "duration": "0.250",
        "repeats": "1",
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


STARTED = 1764532242.0  # 2025-11-30 19:50:42 UTC


def suite_of(text: str) -> ET.Element:
    SCHEMA.validate(text)
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    return suite


def properties_of(suite: ET.Element) -> dict[str | None, str | None]:
    return {p.get("name"): p.get("value") for p in suite.iter("property")}


def passing(name: str, index: int, strategy: str = "Exact", **kw: Any) -> EvaluationRow:
    return EvaluationRow.from_result(
        sample(name), strategy, "yes", EvaluationResult.passing(), index=index, **kw
    )


def test_a_partial_run_is_an_error_test_case_and_a_property() -> None:
    report = EvaluationReport([passing("a", 0), passing("b", 1)]).with_run(
        RunInfo(started_at=STARTED, complete=False, samples_expected=40)
    )

    suite = suite_of(report.format("junit"))

    counts = {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "3", "failures": "0", "errors": "1", "skipped": "0"}
    properties = properties_of(suite)
    assert (properties["complete"], properties["samples_expected"]) == ("false", "40")
    assert properties["samples"] == "2"
    first = suite.find("testcase")
    assert first is not None
    assert (first.get("classname"), first.get("name")) == (
        "aeval",
        "run stopped after 2 of 40 samples",
    )
    error = first.find("error")
    assert error is not None
    assert error.get("type") == "partial"
    assert error.get("message") == (
        "PARTIAL RUN: run stopped after 2 of 40 samples. The scores cover only the samples "
        "evaluated; do not gate a release on them."
    )
    assert [c.get("name") for c in suite.findall("testcase")[1:]] == ["a", "b"]


def test_a_complete_run_has_no_partial_test_case() -> None:
    report = EvaluationReport([passing("a", 0)]).with_run(
        RunInfo(started_at=STARTED, finished_at=STARTED + 1, samples_expected=1)
    )
    suite = suite_of(report.format("junit"))
    assert [c.get("classname") for c in suite.iter("testcase")] == ["Exact"]
    assert (suite.get("tests"), suite.get("errors")) == ("1", "0")
    assert properties_of(suite)["complete"] == "true"


def test_the_run_header_is_in_the_properties() -> None:
    run = RunInfo(
        started_at=STARTED,
        finished_at=STARTED + 20.5,
        samples_expected=2,
        concurrency=4,
        aeval_version="9.9.9",
        git_commit="0123456789abcdef0123456789abcdef01234567",
        warnings=("sink failed", "cache <full>"),
    )
    report = EvaluationReport([passing("a", 0), passing("b", 1)]).with_run(run)

    text = report.format("junit")

    suite = suite_of(text)
    properties = properties_of(suite)
    expected = {
        "started_at": "2025-11-30T19:50:42Z",
        "finished_at": "2025-11-30T19:51:02Z",
        "duration": "20.500",
        "aeval_version": "9.9.9",
        "concurrency": "4",
        "repeats": "1",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "samples": "2",
        "samples_expected": "2",
        "complete": "true",
        "score": "100.00",
        "score_ci95_low": "34.24",
        "score_ci95_high": "100.00",
    }
    assert {key: properties[key] for key in expected} == expected
    assert "flaky" not in properties
    warnings = [p.get("value") for p in suite.iter("property") if p.get("name") == "warning"]
    assert warnings == ["sink failed", "cache <full>"]
    assert suite.get("timestamp") == "2025-11-30T19:50:42"


def test_the_score_interval_properties_follow_the_report() -> None:
    report = EvaluationReport(rows())
    low, high = report.confidence_interval()
    properties = properties_of(suite_of(report.format("junit")))
    assert low < report.score < high
    assert (properties["score_ci95_low"], properties["score_ci95_high"]) == (
        f"{low:.2f}",
        f"{high:.2f}",
    )


def test_a_skipped_row_is_skipped_in_junit_and_not_passed_in_the_score() -> None:
    gate = EvaluationRow.from_result(
        sample("a"), "Exact", "no", EvaluationResult.failing("wrong"), index=0
    )
    gated = EvaluationRow(
        sample("a"),
        "Judge",
        "no",
        Outcome.SKIPPED,
        None,
        "not run: Exact failed",
        index=0,
        position=1,
    )
    report = EvaluationReport([gate, gated, passing("b", 1)])

    suite = suite_of(report.format("junit"))

    counts = {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "3", "failures": "1", "errors": "0", "skipped": "1"}
    properties = properties_of(suite)
    assert (properties["score"], properties["skipped"], properties["passed"]) == (
        "33.33",
        "1",
        "1",
    )
    cases = suite.findall("testcase")
    skipped = cases[1].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "not run: Exact failed"
    assert cases[1].find("failure") is None
    assert cases[0].find("failure") is not None


def test_flaky_pairs_are_noted_on_their_test_cases() -> None:
    report = EvaluationReport(
        [
            EvaluationRow.from_result(
                sample("a"),
                "Exact",
                "yes",
                EvaluationResult.from_boolean(repeat != 1),
                repeat=repeat,
            )
            for repeat in range(3)
        ]
        + [passing("b", 1, repeat=repeat) for repeat in range(3)]
    )

    suite = suite_of(report.format("junit"))

    notes = {c.get("name"): c.findtext("system-out") for c in suite.iter("testcase")}
    assert notes == {
        "a [repeat 1]": "flaky: 2/3 repeats passed",
        "a [repeat 2]": "flaky: 2/3 repeats passed",
        "a [repeat 3]": "flaky: 2/3 repeats passed",
        "b [repeat 1]": None,
        "b [repeat 2]": None,
        "b [repeat 3]": None,
    }
    properties = properties_of(suite)
    assert (properties["flaky"], properties["repeats"]) == ("1", "3")


def test_a_failed_call_says_the_strategy_could_not_run() -> None:
    error = ErrorInfo("ValueError", "boom", "Traceback ...", source="function")
    report = EvaluationReport(
        EvaluationRow.from_error(sample("a"), name, None, error, position=i)
        for i, name in enumerate(("Exact", "Judge"))
    )

    suite = suite_of(report.format("junit"))

    assert suite.get("errors") == "2"
    assert properties_of(suite)["failed_calls"] == "1"
    for case, strategy in zip(suite.iter("testcase"), ("Exact", "Judge"), strict=True):
        assert case.get("classname") == strategy
        element = case.find("error")
        assert element is not None
        assert (element.get("type"), element.get("message"), element.text) == (
            "ValueError",
            "the call failed; the strategy could not run: ValueError: boom",
            "Traceback ...",
        )


def test_a_report_without_every_row_says_how_many_it_holds() -> None:
    report = evaluate_sync(
        [sample(name, expected="no" if name == "b" else "yes") for name in "abc"],
        lambda question: "yes",
        ExactMatchStrategy(),
        keep="failures",
    )

    suite = suite_of(report.format("junit"))

    properties = properties_of(suite)
    assert (properties["rows"], properties["rows_held"], properties["complete"]) == (
        "3",
        "1",
        "true",
    )
    assert suite.get("tests") == "1"


def test_characters_xml_cannot_hold_are_escaped_everywhere() -> None:
    name = "bad\ud800name\x00"
    report = EvaluationReport(
        [EvaluationRow.from_result(sample(name), "Exact", "yes", EvaluationResult.passing())]
    ).with_run(RunInfo(complete=False, warnings=("sink \udfff broke",)))

    suite = suite_of(report.format("junit"))

    assert [c.get("name") for c in suite.iter("testcase")] == [
        "run stopped after 1 samples",
        "bad\\xd800name\\x00",
    ]
    assert properties_of(suite)["warning"] == "sink \\xdfff broke"
