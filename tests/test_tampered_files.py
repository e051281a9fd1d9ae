"""Saved runs that were edited or damaged (rows.jsonl, report.json, the run store) give an
error naming the file, the line or row, and the field; never a traceback or a report built
from garbage."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from _cli import Cli, cli

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
    SampleLoadError,
    StoreError,
    read_run,
)
from aeval.formatters.json import report_from_json

__all__ = ["cli"]

pytestmark = pytest.mark.anyio


def report(count: int = 4, started: float = 1.0e9) -> EvaluationReport:
    rows = [
        EvaluationRow.from_result(
            EvaluationSample(f"s{i}", [i], tags=["t"]),
            "check",
            i,
            EvaluationResult.from_boolean(i % 2 == 0),
            index=i,
        )
        for i in range(count)
    ]
    return EvaluationReport(rows, run=RunInfo(started_at=started, finished_at=started + 1))


ROW_FIELDS = [
    ("score", "high", "field 'score': expected a number from 0 to 1, got 'high'"),
    ("score", 1e308, "field 'score': expected a number from 0 to 1, got 1e+308"),
    pytest.param("score", 10**400, "number is infinity", id="score-10**400"),
    ("index", -1, "field 'index': expected an integer >= 0, got -1"),
    ("index", "3", "field 'index': expected an integer >= 0, got '3'"),
    ("duration", "slow", "field 'duration': expected a number >= 0, got 'slow'"),
    ("outcome", None, "field 'outcome': expected one of passed, failed"),
    ("outcome", "won", "field 'outcome': expected one of passed, failed"),
    ("name", None, "field 'name': missing"),
    ("tags", "billing", "field 'tags': expected a list, got 'billing'"),
    ("error", {"type": 1, "message": "x"}, "field 'error.type': expected text, got 1"),
    ("metadata", [1, 2], "field 'metadata': expected an object, got [1, 2]"),
]


def row_data(**changes: Any) -> dict[str, Any]:
    data = report().evaluations[1].to_dict()
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def dump_line(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode() + b"\n"


@pytest.mark.parametrize(("field", "value", "message"), ROW_FIELDS)
async def test_a_tampered_row_of_rows_jsonl_names_the_file_line_and_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = tmp_path / "rows.jsonl"
    good = report().evaluations[0].to_dict()
    header = {"record": "run", **RunInfo(started_at=1.0).to_dict()}
    path.write_bytes(dump_line(header) + dump_line(good) + dump_line(row_data(**{field: value})))
    with pytest.raises(SampleLoadError) as caught:
        await read_run(path)
    assert caught.value.line == 3 and caught.value.source == str(path)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("samples_expected", "ten", "field 'samples_expected': expected an integer >= 0"),
        ("complete", "yes", "field 'complete': expected true or false, got 'yes'"),
        ("started_at", "noon", "field 'started_at': expected a finite number, got 'noon'"),
        ("strategies", "check", "field 'strategies': expected a list, got 'check'"),
        ("repeats", 0, "field 'repeats': expected an integer >= 1, got 0"),
    ],
)
async def test_a_tampered_header_of_rows_jsonl_names_the_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = tmp_path / "rows.jsonl"
    header = {"record": "run", **RunInfo(started_at=1.0).to_dict(), field: value}
    path.write_bytes(dump_line(header) + dump_line(report().evaluations[0].to_dict()))
    with pytest.raises(SampleLoadError) as caught:
        await read_run(path)
    assert caught.value.line == 1 and message in str(caught.value)


def tampered_report(change: Any) -> bytes:
    data = json.loads(report().format("json"))
    change(data)
    return json.dumps(data).encode()


def set_key(key: str, value: object) -> Any:
    def change(data: dict[str, Any]) -> None:
        if value is None:
            del data[key]
        else:
            data[key] = value

    return change


def set_row(key: str, value: object) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["evaluations"][2][key] = value

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_key("passed", "2"), "field 'passed': expected an integer >= 0, got '2'"),
        (set_key("passed", -2), "field 'passed': expected an integer >= 0, got -2"),
        (set_key("calls", 1e308), "field 'calls': expected an integer >= 0, got 1e+308"),
        (set_key("calls", None), "field 'calls' is missing"),
        (set_key("complete", "yes"), "field 'complete': expected true or false"),
        (set_key("holdsAllRows", 1), "field 'holdsAllRows': expected true or false"),
        (
            set_row("score", "high"),
            "evaluations[2] (sample 's2'): field 'score': expected a number from 0 to 1",
        ),
        (set_row("outcome", "won"), "evaluations[2] (sample 's2'): field 'outcome'"),
    ],
)
def test_a_tampered_report_json_names_the_field(change: Any, message: str) -> None:
    from aeval import FormatError

    with pytest.raises(FormatError) as caught:
        report_from_json(tampered_report(change))
    assert message in str(caught.value)


def test_aeval_report_names_the_tampered_file(tmp_path: Path, cli: Cli) -> None:
    rows = tmp_path / "rows.jsonl"
    header = {"record": "run", **RunInfo(started_at=1.0).to_dict()}
    rows.write_bytes(dump_line(header) + dump_line(row_data(score="0.5")))
    done = cli("report", rows)
    assert done.returncode == 2
    assert f"{rows}:2: not a row: field 'score'" in done.stderr
    path = tmp_path / "report.json"
    path.write_bytes(tampered_report(set_key("failed", "many")))
    done = cli("report", path)
    assert done.returncode == 2
    assert f"{path}: not a valid report.json: field 'failed'" in done.stderr


def stored(tmp_path: Path, count: int = 4) -> tuple[Path, list[str]]:
    path = tmp_path / "runs.sqlite"

    async def fill() -> list[str]:
        async with RunStore(path) as store:
            return [await store.save(report(count, started=1.0e9 + n), "bot") for n in range(2)]

    return path, anyio.run(fill)


def execute(path: Path, statement: str, *values: object) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(statement, values)
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE runs SET score = 'abc' WHERE seq = 2", "field 'score': expected a number"),
        ("UPDATE runs SET rows = -4 WHERE seq = 2", "field 'rows': expected an integer >= 0"),
        ("UPDATE runs SET labels = 'nonsense' WHERE seq = 2", "field 'labels': not a JSON list"),
        (
            "UPDATE runs SET header = '{\"complete\": 1}' WHERE seq = 2",
            "field 'complete': expected true or false",
        ),
    ],
)
def test_tampered_columns_of_the_store_name_the_run_and_field(
    tmp_path: Path, cli: Cli, statement: str, message: str
) -> None:
    path, ids = stored(tmp_path)
    execute(path, statement)
    done = cli("runs", "--store", path)
    assert done.returncode == 2
    assert f"{path}: the run store is damaged or was edited by hand" in done.stderr
    assert f"run {ids[1]}: " in done.stderr and message in done.stderr


def test_a_tampered_row_of_the_store_names_the_run_and_row(tmp_path: Path, cli: Cli) -> None:
    path, ids = stored(tmp_path)
    bad = json.dumps(row_data(score="high"))
    execute(path, "UPDATE rows SET data = ? WHERE id = (2 << 32) + 1", bad)
    done = cli("compare", ids[0], ids[1], "--store", path)
    assert done.returncode == 2
    assert f"{ids[1]}: row 2: field 'score': expected a number from 0 to 1" in done.stderr
    assert "the run store is damaged or was edited by hand" in done.stderr

    async def load() -> None:
        async with RunStore(path) as store:
            await store.load(ids[1])

    with pytest.raises(StoreError, match="row 2: field 'score'"):
        anyio.run(load)


def test_a_damaged_page_of_the_store_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    path, ids = stored(tmp_path, count=3000)
    data = bytearray(path.read_bytes())
    page = 16_384
    pages = len(data) // page
    assert pages > 40
    first, last = pages // 4 * page, 3 * pages // 4 * page  # rows only: the tables come first
    data[first:last] = b"\xa5" * (last - first)
    path.write_bytes(bytes(data))
    assert cli("runs", "--store", path).returncode == 0
    done = cli("compare", ids[0], ids[1], "--store", path)
    assert done.returncode == 2
    assert f"{path}: the run store is damaged or was edited by hand (database disk image is " in (
        done.stderr
    )
    assert "sqlite3 FILE .recover" in done.stderr
