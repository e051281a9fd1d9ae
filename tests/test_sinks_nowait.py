"""Rows handed to sinks without a coroutine (``send_nowait``, issue 25): the same bytes, the
same counts and the same failures as rows awaited through ``send``."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval import (
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
)
from aeval._cli import _run
from aeval._cli._run import _FlushingSink
from aeval._engine._sinks import SinkGroup

pytestmark = pytest.mark.anyio


def _rows(count: int) -> list[EvaluationRow]:
    rows = []
    for i in range(count):
        sample = EvaluationSample(f"s{i}", [f"input-{i}"], f"input-{i}", tags=("t",) * (i % 2))
        result = (
            EvaluationResult.passing(1.0, "same")
            if i % 7
            else EvaluationResult.failing(0.0, "x" * (i % 300)).with_metadata({"i": i})
        )
        rows.append(
            EvaluationRow.from_result(
                sample, "exact", f"input-{i}", result, duration=i / 7, index=i
            )
        )
    return rows


class _AwaitedOnly:
    """A JsonlSink seen through ``send`` alone (the general path)."""

    def __init__(self, path: Path) -> None:
        self.inner = JsonlSink(path)

    async def send(self, row: EvaluationRow) -> None:
        await self.inner.send(row)

    async def flush(self) -> None:
        await self.inner.flush()


async def test_rows_sent_without_waiting_write_the_bytes_of_awaited_sends(tmp_path: Path) -> None:
    rows = _rows(3_000)  # several 64 KB chunks
    nowait = JsonlSink(tmp_path / "nowait.jsonl")
    group = SinkGroup((nowait,))
    waited = 0
    for row in rows:
        rest = group.send_nowait(row)
        if rest:
            waited += 1
            await group.send_rest(rest, row)
    await group.flush()
    awaited = _AwaitedOnly(tmp_path / "awaited.jsonl")
    general = SinkGroup((awaited,))
    for row in rows:
        assert general.send_nowait(row) == general._live
        await general.send(row)
    await general.flush()
    assert (tmp_path / "nowait.jsonl").read_bytes() == (tmp_path / "awaited.jsonl").read_bytes()
    assert nowait.rows_written == awaited.inner.rows_written == 3_000
    assert 0 < waited < 100  # a chunk written now and then: not a coroutine per row


class _Recording:
    def __init__(self, name: str, *, nowait: bool, fail_at: int | None = None) -> None:
        self.name = name
        self.rows: list[str] = []
        self.fail_at = fail_at
        if nowait:
            self.send_nowait = self._take

    def _take(self, row: EvaluationRow) -> bool:
        if self.fail_at is not None and len(self.rows) == self.fail_at:
            raise OSError("disk full")
        self.rows.append(row.name)
        return True

    async def send(self, row: EvaluationRow) -> None:
        self._take(row)

    async def flush(self) -> None:
        pass

    def __repr__(self) -> str:
        return self.name


async def test_a_sink_failing_without_waiting_is_dropped_as_one_failing_when_awaited() -> None:
    rows = _rows(5)
    for nowait in (True, False):
        first = _Recording("first", nowait=nowait, fail_at=2)
        middle = _Recording("middle", nowait=False)
        last = _Recording("last", nowait=True)
        group = SinkGroup((first, middle, last))
        for row in rows:
            rest = group.send_nowait(row)
            if rest:
                await group.send_rest(rest, row)
        assert first.rows == ["s0", "s1"]
        assert middle.rows == last.rows == [f"s{i}" for i in range(5)]
        assert group.warnings == [
            "sink first failed on row 's2' (OSError: disk full); it received 2 row(s) and "
            "none after that"
        ]


async def test_a_sink_timeout_sends_every_row_through_send() -> None:
    sink = _Recording("timed", nowait=True)
    group = SinkGroup((sink,), timeout=5)
    row = _rows(1)[0]
    rest = group.send_nowait(row)
    assert rest and not sink.rows
    await group.send_rest(rest, row)
    assert sink.rows == ["s0"]


async def test_rows_jsonl_takes_rows_without_waiting_until_a_periodic_flush_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_run, "_FLUSH_INTERVAL", 0.0)
    inner = JsonlSink(tmp_path / "rows.jsonl")
    flushing = _FlushingSink(inner)
    assert flushing.send_nowait == inner.send_nowait  # no call of the wrapper per row
    group = SinkGroup((flushing,))
    rows = _rows(2)
    assert group.send_nowait(rows[0]) == ()
    failure = OSError(28, "No space left on device")

    def full(data: bytes, truncate: bool) -> None:
        raise failure

    inner._write_file = full  # type: ignore[method-assign]
    await flushing.run()  # returns once a periodic flush failed
    rest = group.send_nowait(rows[1])
    assert rest
    await group.send_rest(rest, rows[1])
    assert inner.rows_written == 1
    assert group.warnings == [
        f"sink {inner!r} failed on row 's1' (OSError: [Errno 28] No space left on device); "
        "it received 1 row(s) and none after that"
    ]
    other = _FlushingSink(_AwaitedOnly(tmp_path / "x.jsonl"))  # type: ignore[arg-type]
    assert not hasattr(other, "send_nowait")  # another sink: one row at a time, awaited
