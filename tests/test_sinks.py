from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import aeval
from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    Parameters,
    SampleLoadError,
    Samples,
    Scorer,
    read_run,
)
from aeval.formatters.json import report_from_json, report_to_dict
from aeval.strategies import NotBlankStrategy

pytestmark = pytest.mark.anyio


def sample_rows() -> list[EvaluationRow]:
    named = EvaluationSample(
        "named", Parameters.from_pairs([(None, "x"), ("lang", "en")]), ["a", "b"], tags=["t"]
    )
    plain = EvaluationSample("plain", ["q"], "a", metadata={"source": "kb"})
    return [
        EvaluationRow.from_result(
            named,
            "judge",
            "a",
            EvaluationResult.passing(0.8, "ok").with_metadata({"retries": 1}),
            duration=0.5,
            index=0,
        ),
        EvaluationRow.from_error(
            plain, None, None, ErrorInfo("ValueError", "bad", "Traceback..."), index=1
        ),
        EvaluationRow.from_result(
            plain, "judge", "zz", EvaluationResult.unscored("?"), index=2, repeat=1, position=3
        ),
    ]


def test_row_round_trip() -> None:
    for row in sample_rows():
        data = orjson.loads(orjson.dumps(row.to_dict()))
        assert EvaluationRow.from_dict(data) == row


async def test_unnamed_parameters_that_are_mappings_round_trip_everywhere(tmp_path: Path) -> None:
    samples = [
        EvaluationSample("one", [{"x": 1}, "q"], "e"),
        EvaluationSample("entry-like", [{"name": "lang", "value": "en"}], "e"),
    ]
    for sample in samples:
        row = EvaluationRow.from_result(sample, "s", "e", EvaluationResult.passing())
        read = EvaluationRow.from_dict(orjson.loads(orjson.dumps(row.to_dict())))
        assert read.sample.parameters == sample.parameters
        assert read.sample.parameters.names == (None,) * len(sample.parameters.values)
    report = await Scorer().evaluate(samples, lambda *args: "e", NotBlankStrategy())
    assert [r.sample.parameters for r in report_from_json(report.format("json")).evaluations] == [
        s.parameters for s in samples
    ]
    async with aeval.RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report, name="params")
        loaded = await store.load(run_id)
    assert [r.sample.parameters for r in loaded.evaluations] == [s.parameters for s in samples]


def test_one_codec_writes_both_wire_shapes_and_reads_them_back() -> None:
    camel = {
        "output": "actualOutput",
        "expected_output": "expectedOutput",
        "strategy_duration": "strategyDuration",
        "sample_metadata": "sampleMetadata",
    }
    rows = sample_rows()
    report = EvaluationReport(rows)
    entries = report_to_dict(report)["evaluations"]
    assert report_from_json(report.format("json")).evaluations == report.evaluations
    for row, entry in zip(report.evaluations, entries, strict=True):
        line = row.to_dict()
        assert EvaluationRow.from_dict(line) == row
        for key, value in line.items():
            assert orjson.loads(orjson.dumps(entry[camel.get(key, key)])) == value


def test_a_row_of_live_traffic_keeps_its_timestamp() -> None:
    (row,) = sample_rows()[:1]
    assert "timestamp" not in row.to_dict()  # rows of a run over samples are unchanged
    live = EvaluationRow.from_result(
        row.sample, "judge", "a", EvaluationResult.passing(), timestamp=1_790_000_000.25
    )
    data = orjson.loads(orjson.dumps(live.to_dict()))
    assert data["timestamp"] == 1_790_000_000.25
    assert EvaluationRow.from_dict(data) == live
    failed = EvaluationRow.from_error(
        row.sample, "judge", "a", ErrorInfo("ValueError", "bad"), timestamp=5.0
    )
    assert EvaluationRow.from_dict(failed.to_dict()).timestamp == 5.0
    report = EvaluationReport([live, failed])
    assert report_from_json(report.format("json")).evaluations[0].timestamp == 1_790_000_000.25


async def test_sink_writes_every_row_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "out" / "rows.jsonl"
    sink = JsonlSink(path)
    for row in sample_rows():
        await sink.send(row)
    assert not path.exists()  # buffered until flushed
    await sink.flush()
    assert len(path.read_bytes().splitlines()) == 3
    rows = (await read_run(path))[0]
    assert rows == sample_rows()
    assert EvaluationReport(rows).unscored_count == 1


async def test_a_run_through_a_sink(tmp_path: Path) -> None:
    samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(300))

    async def fn(params: Parameters) -> object:
        return params[0]

    def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(sample.expected_output == output)

    path = tmp_path / "rows.jsonl"
    async with JsonlSink(path) as sink:
        report = await Scorer(concurrency=8, sinks=[sink]).evaluate(samples, fn, equals)
    rows = (await read_run(path))[0]
    assert sorted(r.name for r in rows) == sorted(r.name for r in report.evaluations)
    assert EvaluationReport(rows).score == report.score == 100.0


async def test_second_run_truncates_unless_append(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("old line\n")
    sink = JsonlSink(path)
    await sink.send(sample_rows()[0])
    await sink.flush()
    await sink.send(sample_rows()[1])
    await sink.flush()
    assert len(path.read_text().splitlines()) == 2
    appending = JsonlSink(path, append=True)
    await appending.send(sample_rows()[2])
    await appending.flush()
    assert len(path.read_text().splitlines()) == 3


async def test_truncated_last_line_is_skipped_but_a_bad_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    good = orjson.dumps(sample_rows()[0].to_dict())
    path.write_bytes(good + b"\n" + good[:20])
    assert len((await read_run(path))[0]) == 1
    path.write_bytes(good + b"\n{not json}\n" + good + b"\n")
    with pytest.raises(SampleLoadError, match=r"rows.jsonl:2: not a row"):
        await read_run(path)


def test_scorer_rejects_a_non_sink() -> None:
    with pytest.raises(TypeError, match="is not a sink"):
        Scorer(sinks=[object()])  # type: ignore[list-item]
