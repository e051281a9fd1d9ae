"""The Scorer's executor protocol, with an in-process executor (no cluster needed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from aeval import (
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    NotSerializableError,
    Parameters,
    Samples,
    Scorer,
    Shard,
    read_run,
)

pytestmark = pytest.mark.anyio


async def echo(params: Parameters) -> str:
    return str(params[0])


async def fail_on_bad(params: Parameters) -> str:
    if params[0] == "bad":
        raise ValueError("bad input")
    return str(params[0])


def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(output == sample.expected_output)


class InProcess:
    """Evaluates batches of 2 with an inner Scorer; loses its first batch once, as a worker
    that died would, and hands it back."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.refuse = refuse
        self.prepared: list[object] = []
        self.batches: list[list[int]] = []

    def describe(self) -> str:
        return "in-process test executor"

    def prepare(self, function: object, strategies: Sequence[object]) -> object:
        if self.refuse:
            raise NotSerializableError("cannot travel")
        self.prepared.append(function)
        return "payload"

    async def execute(self, job: Any, deliver: Any) -> None:
        assert job.prepared == "payload"
        lost = False
        while batch := await job.feed.take(2):
            if not lost:
                lost = True
                job.feed.give_back(batch)
                job.warn(f"lost {len(batch)} sample(s)")
                continue
            self.batches.append([item.index for item in batch])
            inner = Scorer(job.concurrency, repeats=job.repeats, keep="all")
            report = await inner.evaluate(batch, job.function, *job.strategies)
            rows: list[EvaluationRow] = list(report.evaluations)
            await deliver(rows)


def names(count: int) -> Samples:
    return Samples(EvaluationSample(f"s{i}", [f"a{i}"], f"a{i}") for i in range(count))


async def test_an_executor_delivers_into_the_report_and_sinks(tmp_path: Path) -> None:
    samples = Samples([*names(4), EvaluationSample("bad", ["bad"], "bad")])
    executor = InProcess()
    sink = JsonlSink(tmp_path / "rows.jsonl")
    scorer = Scorer(2, repeats=2, sinks=[sink], executor=executor)
    report = await scorer.evaluate(samples, fail_on_bad, equals)
    local = await Scorer(2, repeats=2).evaluate(samples, fail_on_bad, equals)
    assert executor.batches[0] == [0, 1]
    assert [(r.index, r.repeat, r.outcome) for r in report.evaluations] == [
        (r.index, r.repeat, r.outcome) for r in local.evaluations
    ]
    assert report.call_count == local.call_count == 10
    assert report.function_error_count == local.function_error_count == 2
    assert report.sample_count == 5
    assert report.run.executor == "in-process test executor"
    assert report.warnings == ("lost 2 sample(s)",)
    written, header = await read_run(tmp_path / "rows.jsonl")
    assert len(written) == 10 and header is not None
    assert header.warnings == ("lost 2 sample(s)",) and header.executor == report.run.executor
    assert scorer.statistics().samples_done == 10


async def test_what_cannot_travel_is_refused_before_the_run(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "rows.jsonl")
    scorer = Scorer(sinks=[sink], executor=InProcess(refuse=True))
    with pytest.raises(NotSerializableError):
        await scorer.evaluate(names(2), echo, equals)
    assert not (tmp_path / "rows.jsonl").exists()
    with pytest.raises(TypeError, match="is not an executor"):
        Scorer(executor=object())  # type: ignore[arg-type]


class FeedProbe:
    """Takes from its job's feed as the test says, then evaluates nothing."""

    def __init__(self, steps: Any) -> None:
        self.steps = steps

    def describe(self) -> str:
        return "feed probe"

    def prepare(self, function: object, strategies: Sequence[object]) -> object:
        return None

    async def execute(self, job: Any, deliver: Any) -> None:
        await self.steps(job.feed)


async def test_the_feed_indexes_checks_and_hands_back_first() -> None:
    async def stream() -> AsyncIterator[EvaluationSample]:
        for sample in names(3):
            yield sample

    async def in_order(feed: Any) -> None:
        first = await feed.take(2)
        assert [item.index for item in first] == [0, 1]
        feed.give_back(first[1:])
        assert feed.pending == 1
        assert [item.index for item in await feed.take(5)] == [1, 2]
        assert feed.exhausted and await feed.take(1) == []

    await Scorer(executor=FeedProbe(in_order)).evaluate(stream(), echo, equals)

    async def kept(feed: Any) -> None:
        assert [item.index for item in await feed.take(3)] == [9]

    ninth = Shard(1, 1).select(names(10))[9:]
    await Scorer(executor=FeedProbe(kept)).evaluate(ninth, echo, equals)

    async def bad(feed: Any) -> None:
        await feed.take(1)

    with pytest.raises(TypeError, match="Item 0 of the samples is str"):
        await Scorer(executor=FeedProbe(bad)).evaluate(["not a sample"], echo, equals)  # type: ignore[list-item]


async def test_a_strategy_that_is_late_or_raises_makes_an_error_row() -> None:
    never = anyio.Event()

    async def slow(sample: EvaluationSample, output: object) -> EvaluationResult:
        await never.wait()
        raise AssertionError("unreachable")

    def broken(sample: EvaluationSample, output: object) -> EvaluationResult:
        raise LookupError("no such key")

    samples = Shard(1, 1).select([EvaluationSample(f"s{i}", ["q"], "a") for i in range(4)])[3:]
    report = await Scorer(timeout=0.2, tracebacks=False).evaluate(
        samples, lambda q: "a", slow, broken
    )
    late, failed = report.evaluations
    assert (late.error and late.error.type, late.explanation, late.index) == (
        "TimeoutError",
        "TimeoutError: the strategy slow did not finish within 0.2 s (Scorer timeout)",
        3,
    )
    assert late.error is not None and late.error.traceback is None
    assert failed.error is not None and failed.error.type == "LookupError"


async def test_a_rescore_runs_its_strategies_here_also_with_an_executor() -> None:
    """A rescore calls no function under test, so the executor (where that runs) is not
    used: the strategies run in this process and give the rows a local rescore gives."""
    stored = await Scorer(2, keep="all").evaluate(names(3), echo, equals)
    executor = InProcess(refuse=True)

    report = await Scorer(2, executor=executor).rescore(stored, equals)
    local = await Scorer(2).rescore(stored, equals)

    assert executor.prepared == [] and executor.batches == []
    assert [(r.index, r.outcome, r.output) for r in report.evaluations] == [
        (r.index, r.outcome, r.output) for r in local.evaluations
    ]
    assert report.passed_count == 3
