"""The one row codec: rows.jsonl lines, report.json entries and the run store's rows.

``rows.jsonl`` (and the store) hold :func:`row_to_dict`'s snake_case shape, one line each with
the run's header as a ``run`` record before the rows and a ``run_end`` record after them;
``report.json``'s ``evaluations`` hold :func:`row_to_report_entry`'s camelCase shape (the keys
in :data:`REPORT_KEYS` differ). Both are read back through :func:`row_from_dict`, the one
decoder, which checks every field.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Mapping
from os import PathLike
from typing import Any, TypeVar

import anyio
import orjson

from .._conversation import Transcript
from .._conversation._codec import is_transcript_data, transcript_from_data, transcript_to_data
from .._exceptions import SampleLoadError
from .._samples import EvaluationSample, Parameters
from .._util._jsonsafe import (
    dumps,
    json_default,
    read_count,
    read_list,
    read_mapping,
    read_number,
    read_text,
)
from ..trace import Trace
from ._results import ErrorInfo, ErrorSource, EvaluationRow, Outcome
from ._run_info import RunInfo

__all__ = [
    "REPORT_KEYS",
    "RUN_END_RECORD",
    "RUN_RECORD",
    "error_to_data",
    "output_to_data",
    "parameters_to_data",
    "read_rows",
    "read_run",
    "row_from_dict",
    "row_from_report_entry",
    "row_line",
    "row_to_dict",
    "row_to_report_entry",
]

_V = TypeVar("_V")
_OUTCOME_OF = {outcome.value: outcome for outcome in Outcome}
_COUNT_MAX = 2**63 - 1

RUN_RECORD = "run"
RUN_END_RECORD = "run_end"


def parameters_to_data(params: Parameters) -> list[Any]:
    """Parameters as JSON-ready data: a list of values, or of ``{name, value}`` when named.

    Unnamed values are written in the ``{name, value}`` form too when one of them is a
    mapping, so that reading them back cannot take that mapping for an entry.
    """
    if any(name is not None for name in params.names) or any(
        isinstance(value, Mapping) for value in params.values
    ):
        return [
            {"name": name, "value": value}
            for name, value in zip(params.names, params.values, strict=True)
        ]
    return list(params.values)


def error_to_data(error: ErrorInfo) -> dict[str, Any]:
    """An error as JSON-ready data: type, message, source and the traceback when kept."""
    data: dict[str, Any] = {"type": error.type, "message": error.message, "source": error.source}
    if error.traceback:
        data["traceback"] = error.traceback
    return data


def output_to_data(output: Any) -> Any:
    """A row's output as JSON-ready data: a transcript in its tagged form, else itself."""
    return transcript_to_data(output) if type(output) is Transcript else output


def _output_from(data: Any) -> Any:
    if type(data) is dict and is_transcript_data(data):
        return transcript_from_data(data)
    return data


def row_to_dict(row: EvaluationRow) -> dict[str, Any]:
    """A row as plain JSON-ready data (the JSONL line format): the one place a row becomes
    data; a ``rows.jsonl`` line (:func:`row_line`) and a report.json entry
    (:func:`row_to_report_entry`) are made of it."""
    sample = row.sample
    data: dict[str, Any] = {
        "name": sample.name,
        "index": row.index,
        "repeat": row.repeat,
        "position": row.position,
        "strategy": row.strategy,
        "outcome": row.outcome.value,
        "score": row.score,
        "output": output_to_data(row.output),
        "expected_output": sample.expected_output,
        "explanation": row.explanation,
        "duration": row.duration,
        "strategy_duration": row.strategy_duration,
        "parameters": _parameters_data(sample.parameters),
    }
    if sample.tags:
        data["tags"] = list(sample.tags)
    if sample.metadata:
        data["sample_metadata"] = dict(sample.metadata)
    if row.metadata:
        data["metadata"] = dict(row.metadata)
    if row.error is not None:
        data["error"] = error_to_data(row.error)
    if row.timestamp is not None:
        data["timestamp"] = row.timestamp
    if row.trace is not None:
        data["trace"] = row.trace.to_dict()
    return data


def row_line(row: EvaluationRow) -> bytes:
    """One JSONL line for ``row`` (:func:`row_to_dict` passed to ``orjson.dumps``); never
    raises.

    A value JSON cannot hold as it is (a lone surrogate, an integer beyond 64 bits, a
    self-referencing list, an object whose ``__str__`` raises) is written as a stand-in, and
    the line's ``notes`` say what was changed.
    """
    data = row_to_dict(row)
    try:  # the same bytes as with _LINE_OPTIONS when every key is a str, in less time
        return orjson.dumps(data, default=json_default, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        return orjson.dumps(data, default=json_default, option=_LINE_OPTIONS)
    except (TypeError, ValueError, RecursionError):
        pass
    line, notes = dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    if notes:
        data["notes"] = list(notes)
        line, _ = dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    return line


_LINE_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), list})


def _parameters_data(params: Parameters) -> list[Any]:
    """:func:`parameters_to_data`, with a quicker test for the common unnamed values."""
    values = params._values
    if params._names.count(None) == len(values):
        plain = _PLAIN_VALUES
        for value in values:
            if type(value) not in plain:
                return parameters_to_data(params)
        return list(values)
    return parameters_to_data(params)


def _parameters_from(data: Any) -> Parameters:
    if data is None:
        return Parameters(())
    items = read_list(data, "parameters")
    if any(isinstance(item, Mapping) for item in items):
        pairs = []
        for number, item in enumerate(items):
            entry = read_mapping(item, f"parameters[{number}]")
            if "value" not in entry:
                raise ValueError(f"field 'parameters[{number}]': it has no 'value'")
            name = entry.get("name")
            pairs.append(
                (None if name is None else read_text(name, "parameters.name"), entry["value"])
            )
        return Parameters.from_pairs(pairs)
    return Parameters(items)


def _optional(data: Mapping[str, Any], key: str, read: Callable[[Any, str], _V]) -> _V | None:
    value = data.get(key)
    return None if value is None else read(value, key)


def _error_from(data: Any) -> ErrorInfo | None:
    if data is None:
        return None
    error = read_mapping(data, "error")
    source: ErrorSource = "function" if error.get("source") == "function" else "strategy"
    traceback = error.get("traceback")
    return ErrorInfo(
        read_text(error.get("type"), "error.type"),
        read_text(error.get("message"), "error.message"),
        None if traceback is None else read_text(traceback, "error.traceback"),
        source,
    )


def row_from_dict(data: Mapping[str, Any]) -> EvaluationRow:
    """Rebuild a row written by :func:`row_to_dict`, checking every field.

    This is the one decoder of stored rows (``rows.jsonl``, ``report.json``, the run store):
    a field of the wrong type or out of its range (a score of ``"high"`` or ``1e308``, a
    negative count, a missing outcome) is refused here, never copied into a report.

    Raises:
        ValueError: The data is not a row; the message names the field.
    """
    if not isinstance(data, Mapping):
        read_mapping(data, "row")
    get = data.get
    name = get("name")
    if type(name) is not str:
        if name is None:
            raise ValueError("field 'name': missing (every row names its sample)")
        read_text(name, "name")
    value = get("outcome")
    outcome = _OUTCOME_OF.get(value) if type(value) is str else None
    if outcome is None:
        raise ValueError(
            f"field 'outcome': expected one of {', '.join(_OUTCOME_OF)}, got {value!r}"
        )
    tags = get("tags")
    if tags is not None and (type(tags) is not list or any(type(t) is not str for t in tags)):
        tags = [read_text(tag, "tags") for tag in read_list(tags, "tags")]
    score = get("score")
    if score is not None and not (type(score) is float and 0.0 <= score <= 1.0):
        score = read_number(score, "score", low=0.0, high=1.0)
    sample = EvaluationSample(
        name,
        _parameters_from(get("parameters")),
        get("expected_output"),
        tags=tags or (),
        metadata=_optional(data, "sample_metadata", read_mapping),
    )
    return EvaluationRow(
        sample=sample,
        strategy=_text(data, "strategy"),
        output=_output_from(get("output")),
        outcome=outcome,
        score=score,
        explanation=_text(data, "explanation"),
        metadata=_optional(data, "metadata", read_mapping) or {},
        error=_error_from(get("error")),
        duration=_seconds(data, "duration"),
        strategy_duration=_seconds(data, "strategy_duration"),
        index=_count(data, "index"),
        repeat=_count(data, "repeat"),
        position=_count(data, "position"),
        timestamp=_optional(data, "timestamp", read_number),
        trace=_trace_from(get("trace")),
    )


def _trace_from(data: Any) -> Trace | None:
    if data is None:
        return None
    read_mapping(data, "trace")
    try:
        return Trace.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"field 'trace': {str(exc).removeprefix('trace field ')}") from None


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if value is None or type(value) is str else read_text(value, key)


def _seconds(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key)
    if type(value) is float and 0.0 <= value < math.inf:
        return value
    return 0.0 if value is None else read_number(value, key, low=0.0)


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if type(value) is int and 0 <= value <= _COUNT_MAX:
        return value
    return 0 if value is None else read_count(value, key)


async def _records(path: str | PathLike[str]) -> AsyncIterator[EvaluationRow | RunInfo]:
    source = str(path)
    async with await anyio.open_file(path, "rb") as handle:
        number = 0
        async for raw in handle:
            number += 1
            if not raw.strip():
                continue
            try:
                data = orjson.loads(raw)
                record = data.get("record") if isinstance(data, dict) else None
                if record in (RUN_RECORD, RUN_END_RECORD):
                    info = RunInfo.from_dict(data)
                    yield info if record == RUN_END_RECORD else info.replace(complete=False)
                    continue
                row = row_from_dict(data)
            except (orjson.JSONDecodeError, KeyError, ValueError, TypeError, AttributeError) as exc:
                if not raw.endswith(b"\n"):
                    return
                raise SampleLoadError(f"not a row: {exc}", source=source, line=number) from exc
            yield row


async def read_rows(path: str | PathLike[str]) -> AsyncIterator[EvaluationRow]:
    """Read the rows of a JSONL stream written by :class:`JsonlSink`, lazily.

    The run records (the header and the end of the run) are skipped. A last line cut short
    by an interrupted run is skipped; any other bad line raises a ``SampleLoadError`` naming
    the file and the line.
    """
    async for record in _records(path):
        if isinstance(record, EvaluationRow):
            yield record


async def read_run(path: str | PathLike[str]) -> tuple[list[EvaluationRow], RunInfo | None]:
    """Read a whole run written by :class:`JsonlSink`: its rows and its header.

    The header is the run's end record when the run ended (``complete`` says whether it went
    through every sample), else its start record marked partial (the process was killed);
    ``None`` for a file written without run records.
    """
    rows: list[EvaluationRow] = []
    header: RunInfo | None = None
    ended = False
    async for record in _records(path):
        if isinstance(record, EvaluationRow):
            rows.append(record)
        elif record.finished_at is not None or not ended:
            header = record
            ended = record.finished_at is not None
    return rows, header


def row_to_report_entry(row: EvaluationRow) -> dict[str, Any]:
    """A row as an entry of report.json's ``evaluations``: :func:`row_to_dict` in camelCase
    (see :data:`REPORT_KEYS`) and in the report's order.

    The entry also says whether the row ``passed``, and ``notes`` say what a value JSON cannot
    hold was written as.
    """
    data = row_to_dict(row)
    data["passed"] = row.passed
    entry = {REPORT_KEYS.get(key, key): data[key] for key in _ENTRY_ORDER if key in data}
    _, notes = dumps(entry)
    if notes:
        entry["notes"] = list(notes)
    return entry


REPORT_KEYS = {
    "output": "actualOutput",
    "expected_output": "expectedOutput",
    "strategy_duration": "strategyDuration",
    "sample_metadata": "sampleMetadata",
}
"""The report.json key of each rows.jsonl key that is spelled differently."""
_ENTRY_ORDER = (
    "name",
    "passed",
    "expected_output",
    "output",
    "tags",
    "strategy",
    "outcome",
    "score",
    "explanation",
    "index",
    "repeat",
    "position",
    "duration",
    "strategy_duration",
    "parameters",
    "sample_metadata",
    "metadata",
    "error",
    "timestamp",
    "trace",
)
"""The order of a report.json entry's keys (rows.jsonl keys)."""

_ROW_KEYS = (
    "name",
    "index",
    "repeat",
    "position",
    "strategy",
    "outcome",
    "score",
    "output",
    "expected_output",
    "explanation",
    "duration",
    "strategy_duration",
    "parameters",
    "tags",
    "sample_metadata",
    "metadata",
    "error",
    "timestamp",
    "trace",
)
_DEFAULTS = {"index": 0, "repeat": 0, "position": 0}


def row_from_report_entry(entry: Mapping[str, Any]) -> EvaluationRow:
    """Rebuild a row from an entry of report.json's ``evaluations``, checking every field.

    Raises:
        KeyError: ``name`` or ``outcome`` is missing.
        ValueError: A field has the wrong type or is out of range; the message names it.
    """
    data = {key: entry.get(REPORT_KEYS.get(key, key), _DEFAULTS.get(key)) for key in _ROW_KEYS}
    data["name"] = entry["name"]
    data["outcome"] = entry["outcome"]
    return row_from_dict(data)
