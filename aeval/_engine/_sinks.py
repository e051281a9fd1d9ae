"""Sinks: where rows go as they finish (the JSONL row format is in ``_reporting/_codec.py``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from os import PathLike
from pathlib import Path

import anyio
import anyio.to_thread
import orjson

from .._reporting._codec import RUN_END_RECORD, RUN_RECORD, row_line
from .._reporting._results import EvaluationRow, safe_str
from .._reporting._run_info import RunInfo
from ..abc import BaseSink, Sink
from ._apply import stray_cancellation

__all__ = ["JsonlSink", "Sink", "SinkGroup"]

_FLUSH_BYTES = 64 * 1024
_WAIT_BYTES = 16 * _FLUSH_BYTES


class JsonlSink(BaseSink):
    """Appends each finished row to a JSONL file, one JSON object per line.

    Rows are buffered and written in chunks, each in one call to a worker thread (on asyncio
    and trio alike; a cancellation waits for the chunk to be written); :meth:`flush` (called
    by the Scorer at the end of every run, including a cancelled one) writes the rest and
    closes the file, so the file holds every finished row. The first write truncates the
    file unless ``append=True``; later runs through the same sink append.

    Calls may overlap: one chunk is written at a time, in the order the rows were sent, and
    a row sent while a chunk is being written joins the buffer without waiting for it (until
    the buffer holds far more than a chunk, which then waits, so memory stays bounded).
    :meth:`send_nowait` buffers a row without a coroutine when no write is due (how the
    Scorer sends most rows).

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
        self._writing: anyio.Event | None = None

    @property
    def rows_written(self) -> int:
        """Rows sent so far."""
        return self._rows

    async def send(self, row: EvaluationRow) -> None:
        """Buffer one row; write the buffer once it is large."""
        line = row_line(row)
        self._buffer.append(line)
        self._size += len(line)
        self._rows += 1
        if self._size >= _FLUSH_BYTES and (self._writing is None or self._size >= _WAIT_BYTES):
            await self._write()

    def send_nowait(self, row: EvaluationRow) -> bool:
        """Buffer one row at once, unless the buffer is due to be written first.

        Returns:
            Whether the row was taken; when not (nothing was done), ``await send(row)``.
        """
        if self._size >= _FLUSH_BYTES and (self._writing is None or self._size >= _WAIT_BYTES):
            return False
        line = row_line(row)
        self._buffer.append(line)
        self._size += len(line)
        self._rows += 1
        return True

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
        while self._writing is not None:
            await self._writing.wait()
        if not self._buffer and not self._truncate:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        truncate, self._truncate = self._truncate, False
        writing = self._writing = anyio.Event()
        try:
            await anyio.to_thread.run_sync(self._write_file, data, truncate)
        finally:
            self._writing = None
            writing.set()

    def _write_file(self, data: bytes, truncate: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "wb" if truncate else "ab") as handle:
            handle.write(data)

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
        self._sent = [0] * len(sinks)
        self._index = {id(sink): i for i, sink in enumerate(sinks)}
        self._timeout = timeout
        self._live = self._numbered()
        self.warnings: list[str] = []

    def _numbered(self) -> tuple[tuple[int, Sink, bool], ...]:
        """The live sinks, each with its number and whether it has ``send_nowait``."""
        nowait = self._timeout is None
        return tuple(
            (self._index[id(sink)], sink, nowait and hasattr(sink, "send_nowait"))
            for sink in self._sinks
        )

    @property
    def healthy(self) -> bool:
        """Whether every sink has received every row so far."""
        return not self.warnings

    def _fail(self, sink: Sink, stage: str, exc: Exception) -> None:
        if sink not in self._sinks:
            return  # dropped already: a concurrent call to it failed first
        self._sinks.remove(sink)
        self._live = self._numbered()
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

    def send_nowait(self, row: EvaluationRow) -> tuple[tuple[int, Sink, bool], ...]:
        """Send ``row`` without awaiting to the sinks that can take it so, in order, up to
        the first that cannot (it has no ``send_nowait``, or that returns false).

        Returns:
            The sinks not reached (empty when every sink has the row): pass them to
            :meth:`send_rest`. A sink that raises is dropped, as by :meth:`send`.
        """
        live = self._live
        sent = self._sent
        for position, (number, sink, nowait) in enumerate(live):
            if nowait:
                try:
                    if sink.send_nowait(row):  # type: ignore[attr-defined]
                        sent[number] += 1
                        continue
                except Exception as exc:
                    self._fail(sink, f"on row {row.name!r}", exc)
                    continue
            return live[position:]
        return ()

    async def send(self, row: EvaluationRow) -> None:
        """Send ``row`` to every sink still working."""
        await self.send_rest(self._live, row)

    async def send_rest(
        self, sinks: tuple[tuple[int, Sink, bool], ...], row: EvaluationRow
    ) -> None:
        """Send ``row`` to ``sinks``, what :meth:`send_nowait` did not reach."""
        if self._timeout is not None:
            for number, sink, _ in sinks:
                if await self._call(sink, f"on row {row.name!r}", partial(sink.send, row)):
                    self._sent[number] += 1
            return
        for number, sink, _ in sinks:
            try:
                await sink.send(row)
            except Exception as exc:
                self._fail(sink, f"on row {row.name!r}", exc)
                continue
            except anyio.get_cancelled_exc_class() as exc:
                stray = stray_cancellation(exc, f"sink {safe_str(sink)}")
                if stray is None:
                    raise
                self._fail(sink, f"on row {row.name!r}", stray)
                continue
            self._sent[number] += 1

    async def flush(self) -> None:
        """Flush every sink still working (a long-lived producer's periodic flush)."""
        for sink in list(self._sinks):
            await self._call(sink, "when flushed", sink.flush)

    async def finish(self, run: RunInfo) -> None:
        """Give each sink the run's end and flush it (call shielded from cancellation)."""
        for sink in list(self._sinks):
            await self._call(sink, "when flushed at the end of the run", partial(_end, sink, run))
