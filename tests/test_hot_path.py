"""The per-row hot path (issue 25): the same rows, reports and traces, made with less work.

No timings here: the speed is measured by benchmarks/. These tests pin what the fast paths
must keep (every row, every count, the same values); the Python calls per sample are counted
by ``benchmarks/bench_calls.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from aeval import EvaluationResult, EvaluationSample, Outcome, Samples, Scorer
from aeval._engine._apply import Judged, apply, apply_to_row
from aeval._engine._callables import prepare_strategies
from aeval._reporting._aggregator import RowAggregator
from aeval._reporting._results import EvaluationRow
from aeval.online import OnlineEvaluator
from aeval.online._job import Job, apply_to_job
from aeval.online._sampling import Sampler
from aeval.strategies import ExactMatchStrategy, NotBlankStrategy, inline
from aeval.trace import Recorder, record_tool_call, recording

pytestmark = pytest.mark.anyio

SAMPLE = EvaluationSample("capital", ["France?"], "Paris", tags=("geo",))


def _timed_out(seconds: float) -> str:
    return f"took more than {seconds:g} s"


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
    return dataclasses.replace(row, strategy_duration=0.0)


@pytest.mark.parametrize("case", list(STRATEGIES))
async def test_a_direct_strategy_gives_the_row_a_threaded_one_gives(case: str) -> None:
    """``apply`` calls a direct strategy (a sync check on the event loop) at once; the same
    function marked neither way runs as any other strategy: both make the same row."""
    (strategy,) = prepare_strategies([inline(functools.partial(STRATEGIES[case]))])
    (general,) = prepare_strategies([functools.partial(STRATEGIES[case])])
    assert strategy.direct and not general.direct
    options: dict[str, Any] = {"seconds": 0.05, "timed_out": _timed_out, "tracebacks": False}
    judged = Judged(SAMPLE, "Paris", duration=0.5, index=3, repeat=1, timestamp=12.5)
    made = apply(strategy, judged, **options)
    if inspect.isawaitable(made):
        assert case.startswith("awaitable")
        made = await made
    assert isinstance(made, EvaluationRow)
    expected = await apply_to_row(
        general, SAMPLE, "Paris", duration=0.5, index=3, repeat=1, timestamp=12.5, **options
    )
    assert _comparable(made) == _comparable(expected)
    assert made.strategy_duration >= 0.0
    if case == "interrupts":
        assert made.outcome is Outcome.ERROR and made.error is not None
        assert made.error.type == "RuntimeError" and "KeyboardInterrupt" in made.error.message
    if case == "awaitable, times out":
        assert made.error is not None and made.error.message == "took more than 0.05 s"


def test_a_direct_strategy_is_a_sync_one_that_runs_on_the_loop() -> None:
    async def judge(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.passing()

    def plain(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.passing()

    prepared = prepare_strategies([ExactMatchStrategy(), judge, plain, inline(plain)])
    assert [(s.inline, s.direct) for s in prepared] == [
        (True, True),
        (True, False),
        (True, True),  # the same function, marked by the last item
        (True, True),
    ]


def test_inline_marks_functions_classes_and_instances_and_refuses_the_rest() -> None:
    @inline
    class Check:
        def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
            return EvaluationResult.passing()

    class Other:
        def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
            return EvaluationResult.passing()

    def plain(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.passing()

    assert [s.direct for s in prepare_strategies([Check(), Other(), plain])] == [
        True,
        False,
        False,
    ]
    assert prepare_strategies([inline(Other())])[0].direct

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
    """The aggregator no longer adds a cluster per row when each row is one (one strategy,
    or one repeat): its sums must equal those of the aggregator that counts every cluster."""
    rows = _rows(strategies, 41)
    fast = RowAggregator(strategies=strategies, repeats=1)
    counted = RowAggregator()  # strategies and repeats unknown: every cluster counted
    for row in rows:
        fast.add(row)
        counted.add(row)
    mine, theirs = fast.parts(), counted.parts()
    assert mine.moments == theirs.moments
    assert mine.tags == theirs.tags
    assert mine.strategies == theirs.strategies
    assert mine.counts == theirs.counts
    assert [r.sort_key for r in mine.rows] == sorted(r.sort_key for r in rows)
    merged = fast.merge(counted).parts()
    assert merged.moments.rows == 2 * len(rows)
    assert merged.moments.total == 2 * theirs.moments.total


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


async def test_online_direct_strategies_give_their_rows_at_once() -> None:
    (strategy,) = prepare_strategies([NotBlankStrategy()])
    job = Job({"q": "hi"}, "an answer", "r1", None, (), None, 5.0, None, 0.25)
    row = apply_to_job(strategy, job.sample("online"), job, seconds=None, tracebacks=False)
    assert isinstance(row, EvaluationRow)
    assert (row.outcome, row.timestamp, row.duration) == (Outcome.PASSED, 5.0, 0.25)

    async def judge(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.passing()

    (slow,) = prepare_strategies([judge])
    pending = apply_to_job(slow, job.sample("online"), job, seconds=None, tracebacks=False)
    assert isinstance(pending, Awaitable)
    assert (await pending).outcome is Outcome.PASSED


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
    sampler = Sampler(("a", "b"), None, seed=3)
    assert [sampler.select(None, None) for _ in range(3)] == [(0, 1)] * 3
    partial = Sampler(("a", "b"), {"a": 0.5}, seed=3)
    again = Sampler(("a", "b"), {"a": 0.5}, seed=3)
    assert [partial.select(None, None) for _ in range(20)] == [
        again.select(None, None) for _ in range(20)
    ]
