"""aeval.online: sampling, accounting, the queue's drops, drain, errors, the window, watch."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    Outcome,
    RunInfo,
    RunStore,
    read_run,
)
from aeval.online import OnlineEvaluator, OnlineStatistics
from aeval.strategies import ContainsStrategy, Gated, NotBlankStrategy

pytestmark = pytest.mark.anyio


def settled(stats: OnlineStatistics) -> bool:
    """The accounting identity, at rest."""
    return (
        stats.queue_depth == stats.in_flight == 0
        and stats.submitted == stats.evaluated + stats.sampled_out + stats.dropped
        and stats.dropped
        == stats.queue_full + stats.unfinished + stats.not_running + stats.invalid + stats.crashed
    )


class Blocked:
    """A strategy that waits for ``release``; ``started`` is set by its first call."""

    name = "blocked"

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.calls = 0

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        self.calls += 1
        self.started.set()
        await self.release.wait()
        return EvaluationResult.passing()


class MemorySink:
    def __init__(self) -> None:
        self.rows: list[EvaluationRow] = []
        self.runs: list[RunInfo] = []
        self.flushes = 0

    async def send(self, row: EvaluationRow) -> None:
        self.rows.append(row)

    async def flush(self) -> None:
        self.flushes += 1

    async def run_started(self, run: RunInfo) -> None:
        self.runs.append(run)

    async def run_finished(self, run: RunInfo) -> None:
        self.runs.append(run)


def is_long(sample: EvaluationSample, output: Any) -> EvaluationResult:
    return EvaluationResult.from_boolean(len(str(output)) > 3)


async def test_every_response_is_accounted_for_and_its_rows_reach_the_sink(
    tmp_path: Path,
) -> None:
    path = tmp_path / "online.jsonl"
    async with OnlineEvaluator(
        NotBlankStrategy(),
        is_long,
        sample_rates={"is_long": 0.3},
        seed=1,
        sink=JsonlSink(path),
        clock=lambda: 1_800_000_000.0,
    ) as online:
        assert online.running
        for i in range(300):
            online.submit({"question": f"q{i}"}, "answer" if i % 2 else "no", tags=["faq"])
        await online.join()
        stats = online.statistics()
    assert not online.running
    assert settled(online.statistics()) and settled(stats)
    assert (stats.submitted, stats.evaluated, stats.sampled_out, stats.dropped) == (300, 300, 0, 0)
    judged = stats.rows - 300
    assert 0 < judged < 300 and stats.strategies_sampled_out == 300 - judged
    rows, run = await read_run(path)
    assert len(rows) == stats.rows
    assert run is not None and run.complete and run.finished_at is not None
    assert run.strategies == ("NotBlankStrategy", "is_long")
    assert {row.timestamp for row in rows} == {1_800_000_000.0}
    first = next(row for row in rows if row.index == 1)
    assert first.name == "online-1" and first.tags == ("faq",)
    assert first.sample.parameters.get("question") == "q0"


async def test_submit_returns_whether_the_response_was_queued() -> None:
    async with OnlineEvaluator(is_long, sample_rates=0.0) as online:
        assert online.submit("q", "a") is False
        stats = online.statistics()
        assert (stats.sampled_out, stats.strategies_sampled_out) == (1, 1)
    async with OnlineEvaluator(is_long) as online:
        assert online.submit("q", "a") is True


async def test_sampling_is_reproducible_with_a_seed_and_nested() -> None:
    async def run(seed: int) -> dict[str, set[int]]:
        sink = MemorySink()
        async with OnlineEvaluator(
            NotBlankStrategy(name="wide"),
            NotBlankStrategy(name="narrow"),
            sample_rates={"wide": 0.5, "narrow": 0.1},
            seed=seed,
            sink=sink,
            concurrency=3,
        ) as online:
            for i in range(400):
                online.submit([i], "x")
        chosen: dict[str, set[int]] = {"wide": set(), "narrow": set()}
        for row in sink.rows:
            chosen[str(row.strategy)].add(row.index)
        return chosen

    first, again, other = await run(7), await run(7), await run(8)
    assert first == again
    assert first != other
    assert first["narrow"] <= first["wide"]
    assert 0 < len(first["narrow"]) < len(first["wide"]) < 400


def test_sample_rates_are_checked() -> None:
    with pytest.raises(ValueError, match=r"no strategy called 'judge'.*'is_long'"):
        OnlineEvaluator(is_long, sample_rates={"judge": 0.1})
    with pytest.raises(ValueError, match="between 0 and 1"):
        OnlineEvaluator(is_long, sample_rates={"is_long": 1.5})
    with pytest.raises(TypeError, match="a number"):
        OnlineEvaluator(is_long, sample_rates=True)
    with pytest.raises(TypeError, match="a number"):
        OnlineEvaluator(is_long, sample_rates="0.1")  # type: ignore[arg-type]
    a, b = NotBlankStrategy(name="a"), NotBlankStrategy(name="b")
    assert OnlineEvaluator(a, b, sample_rates={"a": 0.25}).sampler.rates == {"a": 0.25, "b": 1.0}
    assert OnlineEvaluator(a, sample_rates=lambda *_: 1.0).sampler.rates is None


def test_options_are_checked() -> None:
    with pytest.raises(TypeError, match="at least one strategy"):
        OnlineEvaluator()
    with pytest.raises(ValueError, match="queue_size"):
        OnlineEvaluator(is_long, queue_size=-1)
    with pytest.raises(ValueError, match="concurrency"):
        OnlineEvaluator(is_long, concurrency=0)
    with pytest.raises(TypeError, match="concurrency"):
        OnlineEvaluator(is_long, concurrency=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="drain_timeout"):
        OnlineEvaluator(is_long, drain_timeout=-1)
    with pytest.raises(ValueError, match="timeout"):
        OnlineEvaluator(is_long, timeout=0)
    with pytest.raises(ValueError, match="flush_interval"):
        OnlineEvaluator(is_long, flush_interval=0)
    with pytest.raises(TypeError, match="not a sink"):
        OnlineEvaluator(is_long, sink=[object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="list of secrets"):
        OnlineEvaluator(is_long, redact="secret")
    with pytest.raises(ValueError, match="retention"):
        OnlineEvaluator(is_long, resolution=60, retention=10)
    with pytest.raises(TypeError, match="class"):
        OnlineEvaluator(NotBlankStrategy)


async def test_a_rate_function_decides_per_response_and_its_failures_are_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked: list[tuple[str, Any, Any]] = []

    def rate(name: str, inputs: Any, output: Any) -> float:
        asked.append((name, inputs, output))
        if output == "boom":
            raise RuntimeError("no rate")
        if output == "odd":
            return 2.0
        return 1.0 if inputs["vip"] else 0.0

    sink = MemorySink()
    async with OnlineEvaluator(is_long, sample_rates=rate, sink=sink) as online:
        online.submit({"vip": True}, "answer")
        online.submit({"vip": False}, "answer")
        online.submit({"vip": True}, "boom")
        online.submit({"vip": True}, "boom")
        online.submit({"vip": True}, "odd")
    stats = online.statistics()
    assert settled(stats)
    assert (stats.evaluated, stats.sampled_out, stats.invalid, stats.dropped) == (1, 1, 3, 3)
    assert asked[0] == ("is_long", {"vip": True}, "answer")
    assert [row.index for row in sink.rows] == [1]
    warnings = [r.getMessage() for r in caplog.records if r.name == "aeval.online"]
    assert len(warnings) == 1 and "rate function raised RuntimeError: no rate" in warnings[0]


async def test_a_gated_judge_online_gives_a_skipped_row_without_a_call() -> None:
    calls: list[Any] = []

    async def judge(sample: EvaluationSample, output: Any) -> EvaluationResult:
        calls.append(output)
        return EvaluationResult.passing(0.9)

    sink = MemorySink()
    gated = Gated(judge, after=[NotBlankStrategy(), ContainsStrategy(["Paris"])])
    async with OnlineEvaluator(gated, sink=sink) as online:
        online.submit("capital of France?", "Paris")
        online.submit("capital of France?", "Lyon")
        online.submit("capital of France?", "   ")
    assert calls == ["Paris"]
    outcomes = {row.output: row.outcome for row in sink.rows}
    assert outcomes == {"Paris": Outcome.PASSED, "Lyon": Outcome.SKIPPED, "   ": Outcome.SKIPPED}
    assert online.statistics().evaluated == 3
    assert (await online.window()).skipped == 2


async def test_watch_submits_the_call_and_returns_its_result_unchanged() -> None:
    sink = MemorySink()

    def fails(sample: EvaluationSample, output: Any) -> EvaluationResult:
        raise ValueError("strategy bug")

    async with OnlineEvaluator(fails, is_long, sink=sink) as online:

        @online.watch(tags=["faq"], metadata={"model": "m1"})
        async def answer(question: str, *, lang: str = "en") -> dict[str, str]:
            return {"text": f"{question}!"}

        result = await answer("Where is Paris", lang="fr")
        assert result == {"text": "Where is Paris!"}
        assert answer.__name__ == "answer"
        await online.join()
    stats = online.statistics()
    assert (stats.submitted, stats.evaluated, stats.errors, stats.rows) == (1, 1, 1, 2)
    error, long = sink.rows
    assert error.outcome is Outcome.ERROR and error.error is not None
    assert error.error.type == "ValueError" and long.passed
    assert long.name == "answer-1" and long.tags == ("faq",)
    assert long.sample.metadata == {"model": "m1"}
    params = long.sample.parameters
    assert (params.get("question"), params.get("lang")) == ("Where is Paris", "fr")
    assert long.output == {"text": "Where is Paris!"} and long.duration >= 0


async def test_watch_lets_an_exception_through_and_submits_nothing() -> None:
    class Refused(Exception):
        pass

    async with OnlineEvaluator(is_long) as online:

        @online.watch
        async def answer(question: str) -> str:
            raise Refused(question)

        with pytest.raises(Refused, match="why"):
            await answer("why")
    assert online.statistics().submitted == 0


async def test_watch_works_on_a_plain_function_called_from_another_thread() -> None:
    sink = MemorySink()
    async with OnlineEvaluator(is_long, sink=sink) as online:

        @online.watch(name="lookup")
        def lookup(key: str) -> str:
            return key.upper()

        class Bot:
            @online.watch
            def reply(self, text: str) -> str:
                return text * 2

        assert await anyio.to_thread.run_sync(lookup, "paris") == "PARIS"
        assert Bot().reply("ab") == "abab"
        # the thread's submission reached the loop before the thread's result did
        assert online.statistics().submitted == 2
        await online.join()
    assert sorted(row.name for row in sink.rows) == ["lookup-1", "reply-2"]
    assert [row.sample.parameters.names for row in sorted(sink.rows, key=lambda r: r.index)] == [
        ("key",),
        ("text",),
    ]
    assert settled(online.statistics())


async def test_watch_rejects_what_is_not_a_function() -> None:
    async with OnlineEvaluator(is_long) as online:
        with pytest.raises(TypeError, match="decorates a function"):
            online.watch(42)  # type: ignore[call-overload]


async def test_a_full_queue_drops_and_counts_and_submit_never_waits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocked = Blocked()
    async with OnlineEvaluator(blocked, queue_size=1, concurrency=1) as online:
        assert online.submit("q", "first") is True
        await blocked.started.wait()  # the worker holds the first response
        assert online.submit("q", "second") is True  # waits in the queue
        results = [online.submit("q", f"more {i}") for i in range(8)]
        assert results == [False] * 8
        stats = online.statistics()
        assert (stats.queue_depth, stats.in_flight, stats.queue_full) == (1, 1, 8)
        assert stats.pending == 2
        blocked.release.set()
        await online.join()
    stats = online.statistics()
    assert settled(stats)
    assert (stats.submitted, stats.evaluated, stats.dropped, stats.queue_full) == (10, 2, 8, 8)
    full = [r for r in caplog.records if "queue is full" in r.getMessage()]
    assert len(full) == 1 and full[0].levelno == logging.WARNING


async def test_shutdown_drains_within_its_deadline_and_counts_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocked = Blocked()
    sink = MemorySink()
    async with OnlineEvaluator(
        NotBlankStrategy(), blocked, concurrency=1, drain_timeout=0, sink=sink
    ) as online:
        online.submit("q", "one")
        await blocked.started.wait()
        online.submit("q", "two")
        online.submit("q", "three")
    stats = online.statistics()
    assert settled(stats)
    assert (stats.evaluated, stats.unfinished, stats.dropped) == (0, 3, 3)
    assert sink.rows == []  # a response is delivered whole or not at all
    end = sink.runs[-1]
    assert end.finished_at is not None and not end.complete
    assert any("3 unfinished at shutdown" in w for w in end.warnings)
    logged = [r.getMessage() for r in caplog.records if r.name == "aeval.online"]
    assert len(logged) == 1
    assert "3 response(s) could not be evaluated within the drain timeout of 0 s" in logged[0]


async def test_shutdown_evaluates_what_is_queued_when_there_is_time() -> None:
    sink = MemorySink()
    async with OnlineEvaluator(NotBlankStrategy(), concurrency=2, sink=sink) as online:
        for i in range(100):
            online.submit([i], "x")
    stats = online.statistics()
    assert (stats.evaluated, stats.dropped, len(sink.rows)) == (100, 0, 100)
    assert sink.runs[-1].complete


async def test_a_cancelled_lifespan_still_drains_and_the_cancellation_propagates() -> None:
    sink = MemorySink()
    with anyio.CancelScope() as scope:
        async with OnlineEvaluator(NotBlankStrategy(), concurrency=2, sink=sink) as online:
            for i in range(50):
                online.submit([i], "x")
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert online.statistics().evaluated == 50 and len(sink.rows) == 50


async def _awaits_a_cancelled_task() -> None:
    task = asyncio.get_running_loop().create_task(asyncio.sleep(3600))
    await asyncio.sleep(0)
    task.cancel()  # something else cancels the task this strategy shares
    await task


async def test_a_cancelled_error_from_a_strategy_is_an_error_row_and_workers_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def shared(sample: EvaluationSample, output: Any) -> EvaluationResult:
        if output == "shared":
            await _awaits_a_cancelled_task()
        return EvaluationResult.passing()

    sink = MemorySink()
    async with OnlineEvaluator(shared, concurrency=4, sink=sink) as online:
        for i in range(8):
            online.submit([i], "shared")
        await online.join()
        for i in range(8, 12):
            online.submit([i], "fine")
    stats = online.statistics()
    assert settled(stats)
    assert (stats.evaluated, stats.errors, stats.dropped, stats.crashed) == (12, 8, 0, 0)
    errors = [row.error for row in sink.rows if row.error is not None]
    assert len(errors) == 8
    assert all(e.type == "CancelledError" and "not cancelled" in e.message for e in errors)
    assert sink.runs[-1].complete
    assert not [r for r in caplog.records if r.name == "aeval.online"]


async def test_a_worker_stopped_by_a_base_exception_goes_on_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Fatal(BaseException):
        pass

    class FatalOnce(MemorySink):
        async def send(self, row: EvaluationRow) -> None:
            if row.index == 1:
                raise Fatal("the sink gave up")
            await super().send(row)

    sink = FatalOnce()
    async with OnlineEvaluator(NotBlankStrategy(), concurrency=1, sink=sink) as online:
        for i in range(4):
            online.submit([i], "x")
    stats = online.statistics()
    assert settled(stats)
    assert (stats.evaluated, stats.crashed, stats.dropped) == (3, 1, 1)
    assert [row.index for row in sink.rows] == [2, 3, 4]
    assert "1 crashed" in sink.runs[-1].warnings[-1]
    logged = [r for r in caplog.records if r.name == "aeval.online"]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert "evaluation of response 1 stopped on Fatal outside the strategies" in (
        logged[0].getMessage()
    )


async def test_a_blocking_sync_strategy_never_blocks_the_host_loop() -> None:
    entered, release = threading.Event(), threading.Event()

    def moderation(sample: EvaluationSample, output: Any) -> EvaluationResult:
        entered.set()
        # bounded, so that a regression (the call blocking the event loop) fails, not hangs
        return EvaluationResult.from_boolean(release.wait(timeout=10))

    sink = MemorySink()
    progressed: list[bool] = []
    async with OnlineEvaluator(moderation, NotBlankStrategy(), sink=sink) as online:
        online.submit("q", "answer")
        await anyio.to_thread.run_sync(entered.wait)
        await anyio.lowlevel.checkpoint()  # the service's own coroutines go on meanwhile
        progressed.append(not release.is_set())
        release.set()
        await online.join()
    assert progressed == [True]
    assert [(row.strategy, row.outcome) for row in sink.rows] == [
        ("moderation", Outcome.PASSED),
        ("NotBlankStrategy", Outcome.PASSED),
    ]


async def test_a_blocking_sync_strategy_is_abandoned_at_the_online_timeout() -> None:
    release = threading.Event()

    def moderation(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.from_boolean(release.wait(timeout=10))

    sink = MemorySink()
    try:
        async with OnlineEvaluator(moderation, sink=sink, timeout=0.05) as online:
            online.submit("q", "answer")
            await online.join()
    finally:
        release.set()
    assert [str(row.error) for row in sink.rows] == [
        "TimeoutError: the strategy did not finish within 0.05 s (online timeout)"
    ]


async def test_errors_in_strategies_become_error_rows_and_the_others_still_run() -> None:
    class Boom(Exception):
        retries = 2

    # coroutines run on the loop: a 0.01 s timeout cannot catch them waiting for a thread
    async def raises(sample: EvaluationSample, output: Any) -> EvaluationResult:
        raise Boom("judge down")

    async def wrong_type(sample: EvaluationSample, output: Any) -> Any:
        return True

    async def long(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return is_long(sample, output)

    async def hangs(sample: EvaluationSample, output: Any) -> EvaluationResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    sink = MemorySink()
    async with OnlineEvaluator(
        raises, wrong_type, hangs, long, timeout=0.01, tracebacks=True, sink=sink
    ) as online:
        online.submit("q", "long answer")
    stats = online.statistics()
    assert (stats.evaluated, stats.errors, stats.rows) == (1, 3, 4)
    by_name = {row.strategy: row for row in sink.rows}
    assert [row.strategy for row in sink.rows] == ["raises", "wrong_type", "hangs", "long"]
    boom = by_name["raises"]
    assert boom.error is not None and boom.error.type == "Boom"
    assert boom.error.traceback is not None and boom.metadata == {"retries": 2}
    wrong = by_name["wrong_type"].error
    assert wrong is not None and wrong.type == "TypeError"
    timed_out = by_name["hangs"].error
    assert timed_out is not None and timed_out.type == "TimeoutError"
    assert "0.01 s" in timed_out.message
    assert by_name["long"].passed
    assert (await online.window(strategy="raises")).errors == 1


async def test_responses_outside_the_block_are_counted_as_not_running() -> None:
    online = OnlineEvaluator(is_long)
    assert online.submit("q", "before") is False
    await online.join()  # nothing to wait for before the start
    async with online:
        online.submit("q", "during")
    assert online.submit("q", "after") is False
    assert await anyio.to_thread.run_sync(online.submit, "q", "thread after") is False
    stats = online.statistics()
    assert (stats.submitted, stats.evaluated, stats.not_running) == (4, 1, 3)
    assert settled(stats)
    with pytest.raises(RuntimeError, match="runs once"):
        async with online:
            pass
    await online.aclose()  # again: nothing happens


async def test_a_response_that_cannot_become_a_sample_is_counted_invalid(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with OnlineEvaluator(is_long) as online:
        online.submit("q", "a", tags=[1])  # type: ignore[list-item]
        online.submit("q", "a", metadata="not a mapping")  # type: ignore[arg-type]
        online.submit("q", "a", name="ok")
    stats = online.statistics()
    assert (stats.invalid, stats.evaluated, stats.dropped) == (2, 1, 2) and settled(stats)
    assert sum("could not become a sample" in r.getMessage() for r in caplog.records) == 1


async def test_submit_never_raises_even_when_its_clock_does() -> None:
    def broken() -> float:
        raise OSError("no clock")

    online = OnlineEvaluator(is_long, clock=broken)
    assert online.submit("q", "a") is False
    assert online.statistics().not_running == 1


async def test_the_window_scores_by_time_tag_and_strategy() -> None:
    now = [1_000_000.0]
    async with OnlineEvaluator(
        NotBlankStrategy(), is_long, clock=lambda: now[0], resolution=10, retention=3600
    ) as online:
        online.submit("q", "long answer", tags=["faq"])  # t = 1,000,000: 2 passed
        now[0] += 600
        online.submit("q", "no", tags=["chat"])  # t = 1,000,600: 1 passed, 1 failed
        online.submit("q", "   ", tags=["chat", "faq"])  # 2 failed
        await online.join()
        now[0] += 5
        assert await online.average_score() == pytest.approx(100 * 3 / 6)
        assert await online.average_score(since=1_000_600.0) == 25.0
        assert await online.average_score(since=timedelta(minutes=5)) == 25.0
        assert await online.average_score(since=datetime.fromtimestamp(1_000_600, UTC)) == 25.0
        assert await online.average_score(since=1_000_603.0) == 25.0  # rounded down to 10 s
        assert await online.average_score(since=1_000_700.0) is None  # no data, not 0 %
        assert await online.average_score(tag="faq") == 50.0
        assert await online.average_score(strategy="is_long") == pytest.approx(100 / 3)
        window = await online.window(since=1_000_600.0, tag="chat", strategy="NotBlankStrategy")
        assert (window.rows, window.passed, window.failed, window.since) == (2, 1, 1, 1_000_600.0)
        assert window.mean_score == 0.5
        early = await online.window(until=1_000_100.0)
        assert (early.rows, early.passed) == (2, 2)
        strategies = await online.by_strategy(since=1_000_600.0)
        assert {k: v.passed for k, v in strategies.items()} == {
            "NotBlankStrategy": 1,
            "is_long": 0,
        }
        assert {k: v.rows for k, v in (await online.by_strategy(tag="faq")).items()} == {
            "NotBlankStrategy": 2,
            "is_long": 2,
        }
        tags = await online.by_tag()
        assert {k: (v.rows, v.passed) for k, v in tags.items()} == {
            "chat": (4, 1),
            "faq": (4, 2),
        }
        empty = await online.window(tag="nope")
        assert (empty.rows, empty.score, empty.mean_score) == (0, None, None)
        now[0] += 7200  # past the retention: the first rows are forgotten
        online.submit("q", "long answer")
        await online.join()
        assert (await online.window()).rows == 2
        with pytest.raises(TypeError, match="since must be"):
            await online.average_score(since="yesterday")  # type: ignore[arg-type]


async def test_a_naive_datetime_means_utc_as_in_the_run_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # local time 9 h ahead of UTC
    time.tzset()
    try:
        moment = 1_000_600.0
        naive = datetime.fromtimestamp(moment, UTC).replace(tzinfo=None)
        now = [moment]
        async with OnlineEvaluator(is_long, clock=lambda: now[0], resolution=10) as online:
            online.submit("q", "long answer")
            await online.join()
            assert await online.average_score(since=naive) == 100.0
            assert await online.average_score(since=naive + timedelta(seconds=60)) is None
        async with RunStore(tmp_path / "runs.sqlite") as store:
            row = EvaluationRow.from_result(
                EvaluationSample("s", ["q"]), "is_long", "long answer", EvaluationResult.passing()
            )
            await store.save(EvaluationReport([row], run=RunInfo(started_at=moment)), "bot")
            assert await store.average_score("bot", since=naive) == 100.0
            assert await store.average_score("bot", since=naive + timedelta(seconds=60)) is None
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


async def test_a_failing_sink_is_logged_once_and_evaluation_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(MemorySink):
        async def send(self, row: EvaluationRow) -> None:
            raise OSError("disk full")

    good = MemorySink()
    async with OnlineEvaluator(is_long, sink=[Broken(), good]) as online:
        for i in range(5):
            online.submit([i], "answer")
    assert online.statistics().evaluated == 5 and len(good.rows) == 5
    failures = [r.getMessage() for r in caplog.records if "disk full" in r.getMessage()]
    assert len(failures) == 1 and "received 0 row(s)" in failures[0]
    assert any("disk full" in w for w in good.runs[-1].warnings)


async def test_sinks_are_flushed_while_the_service_runs() -> None:
    class Watched(MemorySink):
        def __init__(self) -> None:
            super().__init__()
            self.flushed = anyio.Event()

        async def flush(self) -> None:
            await super().flush()
            self.flushed.set()

    sink = Watched()
    async with OnlineEvaluator(is_long, sink=sink, flush_interval=0.001) as online:
        online.submit("q", "answer")
        await sink.flushed.wait()  # the flusher's tick, before any shutdown
        assert online.running
    assert sink.flushes >= 2  # and once more at shutdown


async def test_secrets_are_redacted_from_rows() -> None:
    sink = MemorySink()
    async with OnlineEvaluator(is_long, redact=["sk-secret-123"], sink=sink) as online:
        online.submit("q", "the key is sk-secret-123")
    assert sink.rows[0].output == "the key is [REDACTED]"


def test_repr_names_the_strategies_and_the_state() -> None:
    assert repr(OnlineEvaluator(is_long, name="bot")) == "<OnlineEvaluator 'bot' [is_long] new>"


def test_it_runs_on_trio_and_takes_submissions_from_threads() -> None:
    pytest.importorskip("trio")

    async def main() -> OnlineStatistics:
        async with OnlineEvaluator(is_long) as online:
            online.submit("q", "answer")
            await anyio.to_thread.run_sync(online.submit, "q", "from a thread")
            await online.join()
        return online.statistics()

    stats = anyio.run(main, backend="trio")
    assert (stats.submitted, stats.evaluated) == (2, 2)


def test_without_opentelemetry_nothing_is_imported(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if aeval-engine[otel] were not installed
        import anyio
        from aeval import MissingExtraError
        from aeval.online import OnlineEvaluator

        def check(sample, output):
            from aeval import EvaluationResult
            return EvaluationResult.passing()

        async def main():
            async with OnlineEvaluator(check) as online:
                online.submit("q", "a")
            assert online.statistics().evaluated == 1
            try:
                OnlineEvaluator(check, otel=True)
            except MissingExtraError as exc:
                print("missing:", exc)

        anyio.run(main)
        print("imported:", sorted(m for m in sys.modules if m.startswith("opentelemetry.")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "missing: OnlineEvaluator(otel=True) needs OpenTelemetry" in done.stdout
    assert "imported: []" in done.stdout


async def test_rows_go_to_the_run_store_as_one_run(tmp_path: Path) -> None:
    from aeval import RunStore
    from aeval.strategies import NotBlankStrategy

    store = RunStore(tmp_path / "runs.sqlite")
    async with OnlineEvaluator(NotBlankStrategy(), store=store, name="support") as online:
        for answer in ("Paris", "", "Rome"):
            online.submit({"question": "capital?"}, answer)
        await online.join()
    [run] = await store.runs("support")
    assert (run.rows, run.complete) == (3, True)
    assert await store.average_score("support") == pytest.approx(200 / 3)
    report = await store.load("support@latest")
    assert [row.timestamp is not None for row in report.evaluations] == [True] * 3
    await store.aclose()


class HangingSink(MemorySink):
    """Takes rows until ``hang_on``, then never answers that call (send or flush)."""

    def __init__(self, hang_on: str) -> None:
        super().__init__()
        self.hang_on = hang_on

    async def send(self, row: EvaluationRow) -> None:
        if self.hang_on == "send" and self.rows:
            await anyio.Event().wait()
        self.rows.append(row)

    async def flush(self) -> None:
        if self.hang_on == "flush":
            await anyio.Event().wait()


@pytest.mark.parametrize("hang_on", ["send", "flush"])
async def test_a_sink_that_hangs_is_dropped_and_cannot_hold_the_shutdown(
    hang_on: str, caplog: pytest.LogCaptureFixture
) -> None:
    hanging, healthy = HangingSink(hang_on), MemorySink()
    with anyio.fail_after(30):  # a hang guard, not a timing assertion
        async with OnlineEvaluator(
            NotBlankStrategy(),
            sink=[hanging, healthy],
            sink_timeout=0.05,
            flush_interval=None,
            drain_timeout=30,
        ) as online:
            for n in range(3):
                online.submit("q", f"answer {n}", name=f"r{n}")
            await online.join()
    stats = online.statistics()
    assert (stats.evaluated, stats.dropped) == (3, 0)
    assert len(healthy.rows) == 3 and healthy.runs[-1].finished_at is not None
    stage = "on row 'r1'" if hang_on == "send" else "when flushed at the end of the run"
    received = 1 if hang_on == "send" else 3
    logged = [r.getMessage() for r in caplog.records if "HangingSink" in r.getMessage()]
    assert len(logged) == 1
    assert f"failed {stage} (TimeoutError: no answer within 0.05 s (sink_timeout))" in logged[0]
    assert logged[0].endswith(f"it received {received} row(s) and none after that")
    # the run's end record names a sink dropped before it (one that hangs at the end, after)
    in_end = [w for w in healthy.runs[-1].warnings if "HangingSink" in w]
    assert len(in_end) == (1 if hang_on == "send" else 0)


def test_sink_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sink_timeout must be positive seconds, got 0"):
        OnlineEvaluator(NotBlankStrategy(), sink_timeout=0)
