"""Sinks: where rows go as they finish, and the JSONL row format."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from os import PathLike
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import aiofiles
import anyio
import orjson

from ._exceptions import SampleLoadError
from ._results import ErrorInfo, EvaluationRow, Outcome
from ._samples import EvaluationSample, Parameters

__all__ = ["JsonlSink", "Sink", "read_rows", "row_from_dict", "row_to_dict"]

_FLUSH_BYTES = 64 * 1024


@runtime_checkable
class Sink(Protocol):
    """Receives every row as it finishes.

    The Scorer calls :meth:`send` for each row and :meth:`flush` when a run ends, also when it
    is cancelled (shielded), so every finished row reaches the sink.
    """

    async def send(self, row: EvaluationRow) -> None:
        """Accept one row."""

    async def flush(self) -> None:
        """Make every row sent so far durable."""


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
    if any(name is not None for name in params.names):
        out["parameters"] = [
            {"name": name, "value": value}
            for name, value in zip(params.names, params.values, strict=True)
        ]
    else:
        out["parameters"] = list(params.values)
    if sample.tags:
        out["tags"] = list(sample.tags)
    if sample.metadata:
        out["sample_metadata"] = dict(sample.metadata)
    if row.metadata:
        out["metadata"] = dict(row.metadata)
    if row.error is not None:
        out["error"] = {"type": row.error.type, "message": row.error.message}
        if row.error.traceback:
            out["error"]["traceback"] = row.error.traceback
    return out


def _parameters_from(data: Any) -> Parameters:
    if isinstance(data, list) and any(isinstance(item, Mapping) for item in data):
        return Parameters.from_pairs((item["name"], item["value"]) for item in data)
    return Parameters(data or ())


def row_from_dict(data: Mapping[str, Any]) -> EvaluationRow:
    """Rebuild a row written by :func:`row_to_dict`.

    Raises:
        KeyError, ValueError, TypeError: The data is not a row.
    """
    sample = EvaluationSample(
        data["name"],
        _parameters_from(data.get("parameters")),
        data.get("expected_output"),
        tags=data.get("tags") or (),
        metadata=data.get("sample_metadata"),
    )
    error = data.get("error")
    return EvaluationRow(
        sample=sample,
        strategy=data.get("strategy"),
        output=data.get("output"),
        outcome=Outcome(data["outcome"]),
        score=data.get("score"),
        explanation=data.get("explanation"),
        metadata=data.get("metadata") or {},
        error=None
        if error is None
        else ErrorInfo(error["type"], error["message"], error.get("traceback")),
        duration=float(data.get("duration") or 0.0),
        strategy_duration=float(data.get("strategy_duration") or 0.0),
        index=int(data.get("index", 0)),
        repeat=int(data.get("repeat", 0)),
        position=int(data.get("position", 0)),
    )


async def read_rows(path: str | PathLike[str]) -> AsyncIterator[EvaluationRow]:
    """Read the rows of a JSONL stream written by :class:`JsonlSink`, lazily.

    A last line cut short by an interrupted run is skipped; any other bad line raises a
    ``SampleLoadError`` naming the file and the line.
    """
    source = str(path)
    async with aiofiles.open(path, "rb") as handle:
        number = 0
        async for raw in handle:
            number += 1
            if not raw.strip():
                continue
            try:
                row = row_from_dict(orjson.loads(raw))
            except (orjson.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
                if not raw.endswith(b"\n"):
                    return
                raise SampleLoadError(f"not a row: {exc}", source=source, line=number) from exc
            yield row


class JsonlSink:
    """Appends each finished row to a JSONL file, one JSON object per line.

    Rows are buffered and written with aiofiles in chunks; :meth:`flush` (called by the Scorer
    at the end of every run, including a cancelled one) writes the rest and closes the file, so
    the file holds every finished row. The first write truncates the file unless
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
        line = orjson.dumps(row_to_dict(row), default=str, option=orjson.OPT_APPEND_NEWLINE)
        self._buffer.append(line)
        self._size += len(line)
        self._rows += 1
        if self._size >= _FLUSH_BYTES:
            await self._write()

    async def _write(self) -> None:
        if not self._buffer and not self._truncate:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        truncate, self._truncate = self._truncate, False
        await anyio.Path(self.path.parent).mkdir(parents=True, exist_ok=True)
        async with aiofiles.open(self.path, "wb" if truncate else "ab") as handle:
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
