"""Rows handed to sinks without a coroutine (``send_nowait``, issue 25): the same bytes, the
same counts and the same failures as rows awaited through ``send``."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval import (
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    RunInfo,
    Scorer,
)
from aeval.online import OnlineEvaluator
from aeval.strategies import ExactMatchStrategy, NotBlankStrategy

pytestmark = pytest.mark.anyio


def _samples(count: int) -> list[EvaluationSample]:
    return [
        EvaluationSample(f"s{i}", [f"input-{i}"], f"input-{i}", tags=("t",) * (i % 2))
        for i in range(count)
    ]


def _answer(text: str) -> str:
    return text if int(text.rpartition("-")[2]) % 7 else "x" * 5


class _AwaitedOnly:
    """A JsonlSink seen through ``send`` alone (the general path)."""

    def __init__(self, path: Path) -> None:
        self.inner = JsonlSink(path)

    async def send(self, row: EvaluationRow) -> None:
        await self.inner.send(row)

    async def flush(self) -> None:
        await self.inner.flush()

    async def run_started(self, run: RunInfo) -> None:
        await self.inner.run_started(run)

    async def run_finished(self, run: RunInfo) -> None:
        await self.inner.run_finished(run)


async def test_rows_sent_without_waiting_write_the_bytes_of_awaited_sends(tmp_path: Path) -> None:
    nowait = JsonlSink(tmp_path / "nowait.jsonl")
    awaited = _AwaitedOnly(tmp_path / "awaited.jsonl")
    scorer = Scorer(1, sinks=[nowait, awaited])
    report = await scorer.evaluate(_samples(3_000), _answer, ExactMatchStrategy())  # 64 KB chunks
    assert report.failed_count > 0 and report.passed_count > 0
    assert (tmp_path / "nowait.jsonl").read_bytes() == (tmp_path / "awaited.jsonl").read_bytes()
    assert nowait.rows_written == awaited.inner.rows_written == 3_000


class _Recording:
    def __init__(self, name: str, *, nowait: bool, fail_at: int | None = None) -> None:
        self.name = name
        self.rows: list[str] = []
        self.awaited: list[str] = []
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
        self.awaited.append(row.name)

    async def flush(self) -> None:
        pass

    def __repr__(self) -> str:
        return self.name


async def test_a_sink_failing_without_waiting_is_dropped_as_one_failing_when_awaited() -> None:
    for nowait in (True, False):
        first = _Recording("first", nowait=nowait, fail_at=2)
        middle = _Recording("middle", nowait=False)
        last = _Recording("last", nowait=True)
        scorer = Scorer(1, sinks=[first, middle, last])
        report = await scorer.evaluate(_samples(5), _answer, ExactMatchStrategy())
        assert first.rows == ["s0", "s1"]
        assert middle.rows == last.rows == [f"s{i}" for i in range(5)]
        assert middle.awaited == middle.rows
        assert list(report.run.warnings) == [
            "sink first failed on row 's2' (OSError: disk full); it received 2 row(s) and "
            "none after that"
        ]


async def test_a_sink_timeout_sends_every_row_through_send() -> None:
    sink = _Recording("timed", nowait=True)
    async with OnlineEvaluator(NotBlankStrategy(), sink=sink, sink_timeout=5) as online:
        online.submit(["q"], "a")
        await online.join()
    assert sink.rows and sink.awaited == sink.rows
