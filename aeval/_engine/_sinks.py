"""Sinks: where rows go as they finish, and the JSONL row format."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson

from .._exceptions import SampleLoadError
from .._reporting._results import ErrorInfo, ErrorSource, EvaluationRow, Outcome, safe_str
from .._reporting._run_info import RunInfo
from .._samples import EvaluationSample, Parameters
from .._util._jsonsafe import dumps, read_count, read_list, read_mapping, read_number, read_text
from ..abc import BaseSink, Sink
from ._callables import stray_cancellation

__all__ = [
    "JsonlSink",
    "Sink",
    "SinkGroup",
    "error_to_data",
    "parameters_to_data",
    "read_rows",
    "read_run",
    "row_from_dict",
    "row_line",
    "row_to_dict",
]

_V = TypeVar("_V")
_OUTCOME_OF = {outcome.value: outcome for outcome in Outcome}
_COUNT_MAX = 2**63 - 1

RUN_RECORD = "run"
RUN_END_RECORD = "run_end"

_FLUSH_BYTES = 64 * 1024


def parameters_to_data(params: Parameters) -> list[Any]:
    """Parameters as JSON-ready data: a list of values, or of ``{name, value}`` when named."""
    if any(name is not None for name in params.names):
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


def row_to_dict(row: EvaluationRow) -> dict[str, Any]:
    """A row as plain JSON-ready data (the JSONL line format)."""
    sample = row.sample
    params = sample.parameters
    out: dict[str, Any] = {
        "name": sample.name,
        "index": row.index,
        "repeat": row.repeat,
        "position": row.position,
        "strategy": row.strategy,
        "outcome": row.outcome.value,
        "score": row.score,
        "output": row.output,
        "expected_output": sample.expected_output,
        "explanation": row.explanation,
        "duration": row.duration,
        "strategy_duration": row.strategy_duration,
    }
    out["parameters"] = parameters_to_data(params)
    if sample.tags:
        out["tags"] = list(sample.tags)
    if sample.metadata:
        out["sample_metadata"] = dict(sample.metadata)
    if row.metadata:
        out["metadata"] = dict(row.metadata)
    if row.error is not None:
        out["error"] = error_to_data(row.error)
    if row.timestamp is not None:
        out["timestamp"] = row.timestamp
    return out


def row_line(row: EvaluationRow) -> bytes:
    """One JSONL line for ``row``; never raises.

    A value JSON cannot hold as it is (a lone surrogate, an integer beyond 64 bits, a
    self-referencing list, an object whose ``__str__`` raises) is written as a stand-in, and
    the line's ``notes`` say what was changed.
    """
    data = row_to_dict(row)
    line, notes = dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    if notes:
        data["notes"] = list(notes)
        line, _ = dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    return line


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
        output=get("output"),
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
    )


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


class JsonlSink(BaseSink):
    """Appends each finished row to a JSONL file, one JSON object per line.

    Rows are buffered and written in chunks through anyio's file API (a worker thread, on
    asyncio and trio alike); :meth:`flush` (called by the Scorer at the end of every run,
    including a cancelled one) writes the rest and closes the file, so the file holds every
    finished row. The first write truncates the file unless
    ``append=True``; later runs through the same sink append.

    Args:
        path: The file to write.
        append: Keep what the file already holds.
    """

    def __init__(self, path: str | PathLike[str], *, append: bool = False) -> None:
        self.path = Path(path)
        self._buffer: list[bytes] = []
        self._size = 0
        self._truncate = not append
        self._rows = 0

    @property
    def rows_written(self) -> int:
        """Rows sent so far."""
        return self._rows

    async def send(self, row: EvaluationRow) -> None:
        """Buffer one row; write the buffer once it is large."""
        self._append(row_line(row))
        self._rows += 1
        if self._size >= _FLUSH_BYTES:
            await self._write()

    def _append(self, line: bytes) -> None:
        self._buffer.append(line)
        self._size += len(line)

    async def run_started(self, run: RunInfo) -> None:
        """Write the run's header record (``{"record": "run", ...}``) before its rows."""
        self._append(orjson.dumps({"record": RUN_RECORD, **run.to_dict()}) + b"\n")

    async def run_finished(self, run: RunInfo) -> None:
        """Write the run's end record: when it ended and whether it went through every sample."""
        self._append(orjson.dumps({"record": RUN_END_RECORD, **run.to_dict()}) + b"\n")

    async def _write(self) -> None:
        if not self._buffer and not self._truncate:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        truncate, self._truncate = self._truncate, False
        await anyio.Path(self.path.parent).mkdir(parents=True, exist_ok=True)
        async with await anyio.open_file(self.path, "wb" if truncate else "ab") as handle:
            await handle.write(data)

    async def flush(self) -> None:
        """Write every buffered row."""
        await self._write()

    async def __aenter__(self) -> JsonlSink:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.flush()

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"


async def _end(sink: Sink, run: RunInfo) -> None:
    hook = getattr(sink, "run_finished", None)
    if hook is not None:
        await hook(run)
    await sink.flush()


class SinkGroup:
    """The sinks of one run: every row goes to each, and one that fails cannot stop the rest.

    A sink that raises, or that takes more than ``timeout`` seconds over one call, is dropped
    for the rest of the run and described in :attr:`warnings` (which sink, on which row, what
    it raised, how many rows it had received), so the run can say truthfully where its rows
    are. Cancellation is never caught; a ``CancelledError`` a sink raises while the run is not
    being cancelled (it awaited something that something else cancelled) is a failure.
    """

    def __init__(self, sinks: tuple[Sink, ...], *, timeout: float | None = None) -> None:
        self._sinks = list(sinks)
        self._sent = dict.fromkeys(range(len(sinks)), 0)
        self._index = {id(sink): i for i, sink in enumerate(sinks)}
        self._timeout = timeout
        self.warnings: list[str] = []

    @property
    def healthy(self) -> bool:
        """Whether every sink has received every row so far."""
        return not self.warnings

    def _fail(self, sink: Sink, stage: str, exc: Exception) -> None:
        if sink not in self._sinks:
            return  # dropped already: a concurrent call to it failed first
        self._sinks.remove(sink)
        sent = self._sent[self._index[id(sink)]]
        self.warnings.append(
            f"sink {safe_str(sink)} failed {stage} ({type(exc).__name__}: {safe_str(exc)}); "
            f"it received {sent} row(s) and none after that"
        )

    async def _call(self, sink: Sink, stage: str, call: Callable[[], Awaitable[None]]) -> bool:
        """Await ``call()``; on an exception or past the timeout, drop ``sink`` and say so."""
        try:
            if self._timeout is None:
                await call()
                return True
            with anyio.move_on_after(self._timeout) as scope:
                await call()
        except Exception as exc:
            self._fail(sink, stage, exc)
            return False
        except anyio.get_cancelled_exc_class() as exc:
            stray = stray_cancellation(exc, f"sink {safe_str(sink)}")
            if stray is None:
                raise
            self._fail(sink, stage, stray)
            return False
        if scope.cancelled_caught:
            late = TimeoutError(f"no answer within {self._timeout:g} s (sink_timeout)")
            self._fail(sink, stage, late)
            return False
        return True

    async def start(self, run: RunInfo) -> None:
        """Give each sink the run's header."""
        for sink in list(self._sinks):
            hook = getattr(sink, "run_started", None)
            if hook is not None:
                await self._call(sink, "at the start of the run", partial(hook, run))

    async def send(self, row: EvaluationRow) -> None:
        """Send ``row`` to every sink still working."""
        if not self._sinks:
            return
        for sink in tuple(self._sinks):
            if await self._call(sink, f"on row {row.name!r}", partial(sink.send, row)):
                self._sent[self._index[id(sink)]] += 1

    async def flush(self) -> None:
        """Flush every sink still working (a long-lived producer's periodic flush)."""
        for sink in list(self._sinks):
            await self._call(sink, "when flushed", sink.flush)

    async def finish(self, run: RunInfo) -> None:
        """Give each sink the run's end and flush it (call shielded from cancellation)."""
        for sink in list(self._sinks):
            await self._call(sink, "when flushed at the end of the run", partial(_end, sink, run))
