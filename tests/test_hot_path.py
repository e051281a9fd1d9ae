"""The per-row hot path (issue 25): the same rows, reports and traces, made with less work.

No timings here: the speed is measured by benchmarks/. These tests pin what the fast paths
must keep (every row, every count, the same values); the Python calls per sample are counted
by ``benchmarks/bench_calls.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from _inline import runs_on_the_loop
from _replay import replayed
from _sinks import Rows

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    Samples,
    Scorer,
    evaluate_sync,
)
from aeval.online import OnlineEvaluator
from aeval.strategies import ExactMatchStrategy, NotBlankStrategy, inline
from aeval.trace import Recorder, record_tool_call, recording

pytestmark = pytest.mark.anyio

SAMPLE = EvaluationSample("capital", ["France?"], "Paris", tags=("geo",))


async def _slow_result() -> EvaluationResult:
    await anyio.sleep(10)
    return EvaluationResult.passing()


async def _quick_result() -> EvaluationResult:
    return EvaluationResult.failing(0.25, "awaited")


class _Interrupting:
    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        raise KeyboardInterrupt


STRATEGIES: dict[str, Callable[[EvaluationSample, Any], Any]] = {
    "passes": lambda s, o: EvaluationResult.passing(0.9, "fine"),
    "fails": lambda s, o: EvaluationResult.failing(0.1, "wrong").with_metadata({"k": 1}),
    "unscored": lambda s, o: EvaluationResult.unscored("no verdict"),
    "skipped": lambda s, o: EvaluationResult.skip("gated"),
    "raises": lambda s, o: 1 / 0,
    "interrupts": _Interrupting().evaluate,
    "wrong type": lambda s, o: "yes",
    "awaitable": lambda s, o: _quick_result(),
    "awaitable, times out": lambda s, o: _slow_result(),
}


def _comparable(row: EvaluationRow) -> EvaluationRow:
    return dataclasses.replace(row, duration=0.0, strategy_duration=0.0)


@pytest.mark.parametrize("case", list(STRATEGIES))
async def test_a_direct_strategy_gives_the_row_a_threaded_one_gives(case: str) -> None:
    """A sync check marked ``@inline`` is called on the event loop at once; the same function
    marked neither way runs as any other strategy: both runs make the same row."""
    rows = []

    async def paris(question: str) -> str:  # never suspends: only a strategy can time out
        return "Paris"

    for strategy in (inline(functools.partial(STRATEGIES[case])), STRATEGIES[case]):
        scorer = Scorer(timeout=0.05, tracebacks=False)
        report = await scorer.evaluate([SAMPLE], paris, strategy)
        [made] = report.evaluations
        assert made.strategy_duration >= 0.0
        rows.append(dataclasses.replace(_comparable(made), strategy="s"))
    made, expected = rows
    assert made == expected
    if case == "interrupts":
        assert made.outcome is Outcome.ERROR and made.error is not None
        assert made.error.type == "RuntimeError" and "KeyboardInterrupt" in made.error.message
    if case == "awaitable, times out":
        assert made.error is not None and made.error.message == (
            "the strategy <lambda> did not finish within 0.05 s (Scorer timeout)"
        )


def test_a_sync_strategy_marked_anywhere_in_the_run_runs_on_the_loop() -> None:
    seen: dict[str, set[int]] = {}

    async def judge(sample: EvaluationSample, output: Any) -> EvaluationResult:
        seen.setdefault("judge", set()).add(threading.get_ident())
        return EvaluationResult.passing()

    def plain(sample: EvaluationSample, output: Any) -> EvaluationResult:
        seen.setdefault("plain", set()).add(threading.get_ident())
        return EvaluationResult.passing()

    async def target(question: str) -> str:
        seen["loop"] = {threading.get_ident()}
        return "Paris"

    report = evaluate_sync([SAMPLE], target, judge, plain, inline(plain))
    assert report.passed_count == 3
    assert seen["judge"] == seen["plain"] == seen["loop"]  # plain is marked by the last item
    assert runs_on_the_loop(ExactMatchStrategy())


def test_inline_marks_functions_classes_and_instances_and_refuses_the_rest() -> None:
    @inline
    class Check:
        def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
            return EvaluationResult.passing()

    class Other:
        def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
            return EvaluationResult.passing()

    assert runs_on_the_loop(Check())
    assert not runs_on_the_loop(Other())
    assert runs_on_the_loop(inline(Other()))

    async def judge(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.passing()

    with pytest.raises(TypeError, match="is async: it runs on the event loop already"):
        inline(judge)
    with pytest.raises(TypeError, match="mark the class instead, @inline on class Exact"):
        inline(ExactMatchStrategy())


async def test_a_marked_strategy_runs_on_the_loop_and_an_unmarked_one_in_a_thread() -> None:
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}

    def where(label: str) -> Callable[[EvaluationSample, Any], EvaluationResult]:
        def check(sample: EvaluationSample, output: Any) -> EvaluationResult:
            seen[label] = threading.get_ident()
            return EvaluationResult.passing()

        check.__name__ = label
        return check

    report = await Scorer(2).evaluate(
        Samples([SAMPLE]), lambda q: "Paris", inline(where("marked")), where("unmarked")
    )
    assert report.passed_count == 2
    assert seen["marked"] == loop_thread
    assert seen["unmarked"] != loop_thread


def test_a_row_made_positionally_equals_one_made_by_name() -> None:
    result = EvaluationResult.passing(0.75, "ok")
    by_name = EvaluationRow.from_result(SAMPLE, "s", "Paris", result, duration=1.0, index=4)
    positional = EvaluationRow(
        SAMPLE, "s", "Paris", Outcome.PASSED, 0.75, "ok", result.metadata, None, 1.0, 0.0, 4
    )
    assert by_name == positional
    assert EvaluationRow(SAMPLE, None, None, Outcome.ERROR, 0.0).metadata == {}


def _rows(strategies: int, samples: int) -> list[EvaluationRow]:
    outcomes = [Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.UNSCORED, Outcome.SKIPPED]
    rows = []
    for index in range(samples):
        sample = EvaluationSample(f"s{index}", tags=("even",) if index % 2 == 0 else ("odd", "x"))
        for position in range(strategies):
            outcome = outcomes[(index * 7 + position * 3) % len(outcomes)]
            score = None if outcome in (Outcome.UNSCORED, Outcome.SKIPPED) else 0.3 * (index % 4)
            rows.append(
                EvaluationRow(
                    sample, f"st{position}", "out", outcome, score, index=index, position=position
                )
            )
    return rows


@pytest.mark.parametrize("strategies", [1, 3])
def test_one_row_clusters_counted_from_the_pass_counts_give_the_same_report(
    strategies: int,
) -> None:
    """A Scorer run, which knows its shape, no longer adds a cluster per row when each row is
    one (one strategy, or one repeat): its sums must equal those of a report built from the
    same rows, which counts every cluster."""
    fast = replayed(_rows(strategies, 41))
    counted = EvaluationReport(fast.evaluations)
    assert fast.evaluation_count == 41 * strategies
    assert fast.moments == counted.moments
    assert fast.tag_statistics == counted.tag_statistics
    assert fast.strategy_statistics == counted.strategy_statistics
    assert fast.counts == counted.counts
    assert fast.confidence_interval() == counted.confidence_interval()


def test_a_recorder_that_records_nothing_makes_nothing_and_many_threads_lose_nothing() -> None:
    with recording() as recorder:
        pass
    assert recorder.snapshot() is None
    with recording() as recorder:
        barrier = threading.Barrier(8)

        def work(n: int) -> None:
            barrier.wait()
            for i in range(100):
                record_tool_call("tool", {"n": n, "i": i})

        import contextvars

        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(work, n))
            for n in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    trace = recorder.snapshot()
    assert trace is not None and len(trace.tool_calls) == 800
    assert {(c.arguments["n"], c.arguments["i"]) for c in trace.tool_calls} == {
        (n, i) for n in range(8) for i in range(100)
    }
    inner = Recorder()
    recorder.absorb(inner)
    empty = Recorder()
    empty.absorb(recorder)
    absorbed = empty.snapshot()
    assert absorbed is not None and len(absorbed.tool_calls) == 800


async def test_online_direct_and_awaited_strategies_give_their_rows() -> None:
    async def judge(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.passing()

    rows = Rows()
    async with OnlineEvaluator(NotBlankStrategy(), judge, sink=rows) as online:
        online.submit({"q": "hi"}, "an answer", name="r1")
        await online.join()
    assert [(row.strategy, row.outcome) for row in rows.rows] == [
        ("NotBlankStrategy", Outcome.PASSED),
        ("judge", Outcome.PASSED),
    ]
    assert all(row.timestamp is not None and row.name == "r1" for row in rows.rows)


async def test_online_counts_every_response_with_inline_and_threaded_checks() -> None:
    loop_thread = threading.get_ident()
    threads: set[int] = set()

    @inline
    def marked(sample: EvaluationSample, output: Any) -> EvaluationResult:
        threads.add(threading.get_ident())
        return EvaluationResult.from_boolean(output != "bad")

    async with OnlineEvaluator(NotBlankStrategy(), marked, queue_size=500) as online:
        for i in range(300):
            online.submit({"q": i}, "bad" if i % 3 == 0 else f"answer {i}")
        await online.join()
        stats = online.statistics()
    assert threads == {loop_thread}
    assert (stats.submitted, stats.evaluated, stats.rows) == (300, 300, 600)
    scores = await online.by_strategy()
    assert scores["marked"].passed == 200 and scores["NotBlankStrategy"].passed == 300


def test_a_sampler_running_everything_draws_nothing() -> None:
    def sampler_of(rates: dict[str, float] | None) -> Any:
        checks = (ExactMatchStrategy(), NotBlankStrategy())
        return OnlineEvaluator(*checks, sample_rates=rates, seed=3).sampler

    sampler = sampler_of(None)
    assert [sampler.select(None, None) for _ in range(3)] == [(0, 1)] * 3
    partial = sampler_of({"ExactMatchStrategy": 0.5})
    again = sampler_of({"ExactMatchStrategy": 0.5})
    assert [partial.select(None, None) for _ in range(20)] == [
        again.select(None, None) for _ in range(20)
    ]
