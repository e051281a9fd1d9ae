"""The JSON report: its keys, its counts, values JSON cannot hold, and reading it back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from _replay import replayed

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    FormatError,
    Parameters,
    Samples,
    Scorer,
)
from aeval.formatters.json import JsonFormatter, report_from_json
from aeval.strategies import ExactMatchStrategy

pytestmark = pytest.mark.anyio


def passed(name: str, index: int, **kw: Any) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], kw.pop("expected", "ok"), tags=kw.pop("tags", ()))
    return EvaluationRow.from_result(
        sample, kw.pop("strategy", "ExactMatch"), kw.pop("output", "ok"),
        EvaluationResult.passing(), index=index, **kw,
    )  # fmt: skip


def failed(name: str, index: int, **kw: Any) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], kw.pop("expected", "ok"), tags=kw.pop("tags", ()))
    return EvaluationRow.from_result(
        sample, kw.pop("strategy", "ExactMatch"), kw.pop("output", "ko"),
        EvaluationResult.failing(kw.pop("score", 0.0), kw.pop("why", None)), index=index, **kw,
    )  # fmt: skip


def mixed_report() -> EvaluationReport:
    return EvaluationReport(
        [
            passed("S1", 0, output="a", expected="a", tags=["t1"]),
            failed(
                "S2",
                1,
                score=0.02675,
                why="Too different",
                output="b",
                expected=["x", "y"],
                tags=["t2", "t1"],
            ),
            EvaluationRow.from_result(
                EvaluationSample("S3", {"question": "q3"}, "c"),
                "Judge",
                "c",
                EvaluationResult.unscored("bad reply"),
                index=2,
            ),
            EvaluationRow.from_error(
                EvaluationSample("S4", ["q"], "d"),
                "Judge",
                None,
                ErrorInfo("ValueError", "boom", None, "function"),
                index=3,
            ),
            EvaluationRow.from_error(
                EvaluationSample("S5", ["q"], None, metadata={"owner": "me"}),
                "Judge",
                42,
                ErrorInfo("TimeoutError", "judge too slow"),
                index=4,
            ),
        ]
    )


def test_upstream_keys_first_then_ours() -> None:
    document = orjson.loads(mixed_report().format("json"))
    assert list(document)[:5] == ["globalScore", "totalSamples", "passed", "failed", "tagScores"]
    assert list(document)[-2:] == ["holdsAllRows", "evaluations"]
    assert document["globalScore"] == 20.0
    assert document["tagScores"] == {"t1": 50.0, "t2": 0.0}


def test_counts_mean_what_they_say() -> None:
    document = orjson.loads(mixed_report().format("json"))
    # samples are samples, rows are rows; failed and errors are apart
    assert document["totalSamples"] == 5
    assert document["rows"] == 5
    assert (document["passed"], document["failed"]) == (1, 1)
    assert (document["unscored"], document["errors"], document["skipped"]) == (1, 2, 0)
    assert document["calls"] == 5
    assert document["failedCalls"] == 1
    assert document["strategies"]["Judge"] == {
        "rows": 3,
        "passed": 0,
        "failed": 0,
        "unscored": 1,
        "skipped": 0,
        "errors": 2,
        "score": 0.0,
        "meanScore": None,
        "scoreSum": 0.0,
        "scored": 0,
        "confidenceInterval": {"confidence": 0.95, "low": 0.0, "high": 56.15, "standardError": 0.0},
        "clusterSums": {
            "rows": 3,
            "total": 0.0,
            "clusters": 3,
            "clusterSq": 0.0,
            "clusterCross": 0.0,
            "clusterSizeSq": 3.0,
        },
    }


def test_interval_and_run_header() -> None:
    document = orjson.loads(mixed_report().format("json"))
    # 1 pass in 5 one-row clusters: SE = sqrt(5/4 * 0.8) / 5 = 0.2; Wilson's 1 of 5
    assert document["confidenceInterval"] == {
        "confidence": 0.95,
        "low": 3.62,
        "high": 62.45,
        "standardError": 20.0,
    }
    assert document["complete"] is True
    assert document["samplesExpected"] is None
    assert set(document["run"]) >= {
        "startedAt",
        "finishedAt",
        "duration",
        "aevalVersion",
        "concurrency",
        "repeats",
        "gitCommit",
        "warnings",
    }


def test_evaluations_carry_inputs_metadata_and_errors_whole() -> None:
    document = orjson.loads(mixed_report().format("json"))
    s1, s2, s3, s4, s5 = document["evaluations"]
    assert s1 == {
        "name": "S1",
        "passed": True,
        "expectedOutput": "a",
        "actualOutput": "a",
        "tags": ["t1"],
        "strategy": "ExactMatch",
        "outcome": "passed",
        "score": 1.0,
        "explanation": None,
        "index": 0,
        "repeat": 0,
        "position": 0,
        "duration": 0.0,
        "strategyDuration": 0.0,
        "parameters": ["q"],
    }
    assert s2["expectedOutput"] == ["x", "y"]
    assert s2["score"] == 0.02675
    assert s3["parameters"] == [{"name": "question", "value": "q3"}]
    assert s3["score"] is None
    assert s4["error"] == {"type": "ValueError", "message": "boom", "source": "function"}
    assert s4["explanation"] == (
        "Failed to execute sample 'S4': ValueError: boom; the strategy Judge could not run"
    )
    assert s5["error"]["source"] == "strategy"
    assert s5["sampleMetadata"] == {"owner": "me"}


def test_pretty_by_default_compact_on_request() -> None:
    report = mixed_report()
    pretty = report.format("json")
    assert pretty.startswith('{\n  "globalScore": 20.0,\n  "totalSamples": 5,\n')
    assert not pretty.endswith("\n")
    compact = JsonFormatter().format(report, pretty=False)
    assert "\n" not in compact
    assert compact.startswith('{"globalScore":20.0,"totalSamples":5,')
    assert orjson.loads(compact) == orjson.loads(pretty)


def test_scores_round_half_up_to_two_decimals() -> None:
    rows = [passed("P", 0)] + [failed(f"F{i}", i + 1, tags=["t"]) for i in range(31)]
    document = orjson.loads(EvaluationReport(rows).format("json"))
    assert document["globalScore"] == 3.13
    two_of_three = EvaluationReport([passed("A", 0), passed("B", 1), failed("C", 2)])
    assert orjson.loads(two_of_three.format("json"))["globalScore"] == 66.67


def test_real_json_for_values_upstream_breaks() -> None:
    sample = EvaluationSample("007", ["q"], 'say "hi"\n\x01', tags=['ta"g'])
    result = EvaluationResult.passing(0.5).with_metadata(
        {"similarity": 0.5, "when": {1, 2}, "raw": Path("/x")}
    )
    row = EvaluationRow.from_result(sample, "Sim", {"answer": ("true", 42)}, result, index=0)
    [evaluation] = orjson.loads(EvaluationReport([row]).format("json"))["evaluations"]
    assert evaluation["name"] == "007"
    assert evaluation["expectedOutput"] == 'say "hi"\n\x01'
    assert evaluation["actualOutput"] == {"answer": ["true", 42]}
    assert sorted(evaluation["metadata"]["when"]) == [1, 2]
    assert evaluation["metadata"]["raw"] == "/x"
    assert "notes" not in evaluation


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def _cyclic() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


@pytest.mark.parametrize(
    ("output", "written", "note"),
    [
        (2**70, "1180591620717411303424", "an integer beyond 64 bits"),
        ("cut \ud83d", "cut \\ud83d", "lone surrogates"),
        ({(1, 2): "v"}, {"(1, 2)": "v"}, "a tuple key"),
        (_cyclic(), [1, "<cycle>"], "contains itself"),
        (_Unprintable(), "<_Unprintable object: str() raised RuntimeError>", "_Unprintable"),
    ],
)
def test_values_json_cannot_hold_are_written_as_stand_ins_with_a_note(
    output: Any, written: Any, note: str
) -> None:
    report = EvaluationReport([passed("Odd", 0, output=output)])
    [evaluation] = orjson.loads(report.format("json"))["evaluations"]
    assert evaluation["actualOutput"] == written
    assert any(note in line for line in evaluation["notes"]), evaluation["notes"]


def test_a_report_that_does_not_hold_every_row_says_so() -> None:
    document = orjson.loads(replayed([passed("A", 0)], keep="none").format("json"))
    assert document["holdsAllRows"] is False
    assert document["evaluations"] == []
    assert document["rows"] == 1


async def test_round_trip_rebuilds_the_same_report_in_every_format() -> None:
    samples = Samples(
        EvaluationSample(f"s{i}", [f"q{i}"], f"q{i}" if i % 3 else "x", tags=["a", "b"][i % 2 :])
        for i in range(9)
    )

    async def echo(params: Parameters) -> str:
        return str(params[0])

    for keep in ("all", "failures"):
        async with Scorer(concurrency=3, repeats=2, keep=keep) as scorer:
            report = await scorer.evaluate(samples, echo, ExactMatchStrategy())
        text = report.format("json")
        again = report_from_json(text)
        assert again.format("json") == text
        assert again.format("markdown") == report.format("markdown")
        assert again.format("junit") == report.format("junit")
        assert again.confidence_interval() == report.confidence_interval()
        assert again.run == report.run
        assert again.repeat_statistics == report.repeat_statistics


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not a valid report.json"),
        ('{"globalScore": 1}', "formatVersion 2 expected"),
        ("[]", "formatVersion 2 expected"),
    ],
)
def test_reading_something_else_is_a_format_error(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        report_from_json(text)
