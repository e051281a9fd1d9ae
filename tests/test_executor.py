"""The Scorer's executor protocol, with an in-process executor (no cluster needed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

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
    read_run,
)
from aeval._engine._executor import Deliver, ExecutorJob, IndexedSample, SampleFeed

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

    async def execute(self, job: ExecutorJob, deliver: Deliver) -> None:
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


async def test_the_feed_indexes_checks_and_hands_back_first() -> None:
    async def stream() -> AsyncIterator[EvaluationSample]:
        for sample in names(3):
            yield sample

    feed = SampleFeed(stream(), None)
    first = await feed.take(2)
    assert [item.index for item in first] == [0, 1]
    feed.give_back(first[1:])
    assert feed.pending == 1
    assert [item.index for item in await feed.take(5)] == [1, 2]
    assert feed.exhausted and await feed.take(1) == []
    kept = SampleFeed([IndexedSample(9, names(1)[0])], None)
    assert [item.index for item in await kept.take(3)] == [9]
    bad = SampleFeed(["not a sample"], None)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Item 0 of the samples is str"):
        await bad.take(1)


def test_a_run_takes_frozen_settings_not_its_scorer() -> None:
    import dataclasses

    from aeval._engine._run import RunSettings

    scorer = Scorer(concurrency=3, timeout=2.0, repeats=2, keep="failures")
    run = scorer._new_run([EvaluationSample("s", ["a"], "a")], lambda params: params[0], [])
    assert isinstance(run.settings, RunSettings)
    assert not hasattr(run, "scorer")
    assert (run.settings.concurrency, run.settings.timeout, run.settings.repeats) == (3, 2.0, 2)
    assert run.settings.keep == "failures"
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.settings.repeats = 5  # type: ignore[misc]


async def test_one_function_applies_a_strategy_and_makes_its_row() -> None:
    from aeval._engine._apply import apply_to_row
    from aeval._engine._callables import prepare_strategies

    never = anyio.Event()

    async def slow(sample: EvaluationSample, output: object) -> EvaluationResult:
        await never.wait()
        raise AssertionError("unreachable")

    def broken(sample: EvaluationSample, output: object) -> EvaluationResult:
        raise LookupError("no such key")

    sample = EvaluationSample("s", ["q"], "a")
    timed, failed = prepare_strategies([slow, broken])
    row = await apply_to_row(
        timed,
        sample,
        "a",
        duration=0.5,
        index=3,
        seconds=0.0,
        timed_out=lambda s: f"late {s:g}",
        tracebacks=False,
        timestamp=7.0,
    )
    assert (row.error and row.error.type, row.explanation, row.index) == (
        "TimeoutError",
        "TimeoutError: late 0",
        3,
    )
    assert (row.duration, row.timestamp) == (0.5, 7.0)
    row = await apply_to_row(
        failed, sample, "a", duration=0.0, index=0, seconds=None, timed_out=str, tracebacks=False
    )
    assert row.error is not None and row.error.type == "LookupError"
    with pytest.raises(LookupError):
        await apply_to_row(
            failed,
            sample,
            "a",
            duration=0.0,
            index=0,
            seconds=None,
            timed_out=str,
            tracebacks=False,
            reraise=(LookupError,),
        )


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
