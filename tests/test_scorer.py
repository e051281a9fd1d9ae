from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from aeval import (
    EvaluationResult,
    EvaluationSample,
    JsonlSink,
    Outcome,
    Parameters,
    Samples,
    Scorer,
    ScorerClosedError,
    read_run,
)
from aeval.strategies import ExactMatchStrategy

pytestmark = pytest.mark.anyio


class _Custom(BaseException):
    pass


def make_samples(n: int, *, tags: tuple[str, ...] = ()) -> Samples:
    return Samples(EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}", tags=tags) for i in range(n))


def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(output == sample.expected_output)


async def equals_on_the_loop(sample: EvaluationSample, output: object) -> EvaluationResult:
    """``equals`` as a coroutine: it runs on the loop, so a short timeout cannot catch it
    waiting for a worker thread on a busy machine."""
    return equals(sample, output)


async def echo(params: Parameters) -> str:
    return str(params[0])


class TestBasics:
    async def test_function_called_once_per_sample_whatever_the_strategies(self) -> None:
        calls: list[str] = []

        async def fn(params: Parameters) -> str:
            calls.append(params[0])
            return str(params[0])

        report = await Scorer(concurrency=3).evaluate(make_samples(5), fn, equals, equals, equals)
        assert sorted(calls) == [f"in{i}" for i in range(5)]
        assert report.evaluation_count == 15
        assert report.score == 100.0

    async def test_rows_in_sample_then_strategy_order_whatever_completion_order(self) -> None:
        last_done = anyio.Event()

        async def fn(params: Parameters) -> str:
            if params[0] == "in0":
                await last_done.wait()
            if params[0] == "in3":
                last_done.set()
            return str(params[0])

        def first(sample: EvaluationSample, output: object) -> EvaluationResult:
            return EvaluationResult.passing()

        report = await Scorer(concurrency=4).evaluate(make_samples(4), fn, first, equals)
        assert [(r.name, r.strategy) for r in report.evaluations] == [
            (f"s{i}", name) for i in range(4) for name in ("first", "equals")
        ]

    async def test_row_fields(self) -> None:
        def contains(sample: EvaluationSample, output: object) -> EvaluationResult:
            return EvaluationResult.failing(0.25, "missing words").with_metadata({"k": 1})

        report = await Scorer().evaluate(make_samples(1, tags=("t",)), echo, contains)
        (row,) = report.evaluations
        assert row.sample.name == "s0"
        assert row.strategy == "contains"
        assert row.output == "in0"
        assert row.outcome is Outcome.FAILED
        assert row.passed is False
        assert row.score == 0.25
        assert row.explanation == "missing words"
        assert dict(row.metadata) == {"k": 1}
        assert row.error is None
        assert row.duration >= 0.0
        assert row.tags == ("t",)
        assert row.expected_output == "in0"

    async def test_strategy_objects_sync_async_and_named(self) -> None:
        class Sync:
            name = "sync-check"

            def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
                return EvaluationResult.passing(0.5)

        class Async:
            async def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
                await anyio.lowlevel.checkpoint()
                return EvaluationResult.failing("no")

        report = await Scorer().evaluate(make_samples(1), echo, Sync(), Async())
        assert [(r.strategy, r.outcome, r.score) for r in report.evaluations] == [
            ("sync-check", Outcome.PASSED, 0.5),
            ("Async", Outcome.FAILED, 0.0),
        ]

    async def test_same_named_strategies_are_told_apart(self) -> None:
        report = await Scorer().evaluate(make_samples(2), echo, equals, equals)
        assert list(report.strategy_scores) == ["equals", "equals#2"]

    async def test_zero_strategies_still_call_the_function(self) -> None:
        calls = 0

        async def fn(params: Parameters) -> str:
            nonlocal calls
            calls += 1
            return ""

        report = await Scorer().evaluate(make_samples(3), fn)
        assert calls == 3
        assert report.evaluation_count == 0
        assert report.score == 0.0
        assert report.sample_count == 3
        assert report.call_count == 3

    async def test_empty_samples(self) -> None:
        report = await Scorer(concurrency=4).evaluate(Samples(), echo, equals)
        assert report.evaluation_count == 0
        assert report.score == 0.0

    async def test_plain_list_of_samples(self) -> None:
        report = await Scorer().evaluate(list(make_samples(2)), echo, equals)
        assert report.passed_count == 2


class TestConcurrency:
    async def test_at_most_concurrency_samples_in_flight(self) -> None:
        concurrency = 3
        in_flight = 0
        highest = 0
        full = anyio.Event()
        gate = anyio.Event()

        async def fn(params: Parameters) -> str:
            nonlocal in_flight, highest
            in_flight += 1
            highest = max(highest, in_flight)
            if in_flight == concurrency:
                full.set()
            await gate.wait()
            in_flight -= 1
            return str(params[0])

        scorer = Scorer(concurrency=concurrency)
        async with anyio.create_task_group() as group:
            group.start_soon(scorer.evaluate, make_samples(10), fn, equals)
            await full.wait()
            await anyio.wait_all_tasks_blocked()
            assert in_flight == concurrency
            assert scorer.statistics().samples_in_flight == concurrency
            gate.set()
        assert highest == concurrency
        assert scorer.statistics().samples_done == 10
        assert scorer.statistics().rows_done == 10

    async def test_sync_function_runs_in_a_worker_thread(self) -> None:
        loop_thread = threading.get_ident()
        threads: set[int] = set()

        def fn(params: Parameters) -> str:
            threads.add(threading.get_ident())
            return str(params[0])

        report = await Scorer(concurrency=2).evaluate(make_samples(4), fn, equals)
        assert report.passed_count == 4
        assert threads and loop_thread not in threads

    async def test_sync_functions_bounded_by_the_scorer_not_by_anyio_default(self) -> None:
        # 50 threads must be inside the function at the same moment: anyio's default
        # limiter (40 threads) would break the barrier.
        barrier = threading.Barrier(50, timeout=10)

        def fn(params: Parameters) -> str:
            barrier.wait()
            return str(params[0])

        report = await Scorer(concurrency=50).evaluate(make_samples(50), fn, equals)
        assert report.passed_count == 50, report.failures[:1]

    async def test_async_iterable_is_consumed_lazily(self) -> None:
        pulled = 0
        gate = anyio.Event()
        started = anyio.Event()

        async def source() -> AsyncIterator[EvaluationSample]:
            nonlocal pulled
            for sample in make_samples(100):
                pulled += 1
                yield sample

        async def fn(params: Parameters) -> str:
            started.set()
            await gate.wait()
            return str(params[0])

        async with anyio.create_task_group() as group:
            result: list[object] = []

            async def run() -> None:
                result.append(await Scorer(concurrency=2).evaluate(source(), fn, equals))

            group.start_soon(run)
            await started.wait()
            await anyio.wait_all_tasks_blocked()
            # two in flight and nothing read ahead: the rest is still unread
            assert pulled == 2
            gate.set()
        (report,) = result
        assert report.passed_count == 100  # type: ignore[attr-defined]


class TestFailuresAreData:
    async def test_function_error_gives_one_error_row_per_strategy(self) -> None:
        async def fn(params: Parameters) -> str:
            if params[0] == "in1":
                raise ValueError("model exploded")
            return str(params[0])

        report = await Scorer().evaluate(make_samples(2), fn, equals, equals)
        rows = report.evaluations
        assert [(r.name, r.strategy, r.outcome) for r in rows] == [
            ("s0", "equals", Outcome.PASSED),
            ("s0", "equals#2", Outcome.PASSED),
            ("s1", "equals", Outcome.ERROR),
            ("s1", "equals#2", Outcome.ERROR),
        ]
        for error_row in rows[2:]:
            assert error_row.function_failed
            assert error_row.error is not None
            assert error_row.error.source == "function"
            assert error_row.error.type == "ValueError"
            assert error_row.error.message == "model exploded"
            assert "ValueError: model exploded" in (error_row.error.traceback or "")
            assert error_row.explanation == (
                "Failed to execute sample 's1': ValueError: model exploded; "
                f"the strategy {error_row.strategy} could not run"
            )
            assert error_row.output is None
            assert error_row.score == 0.0
        # every sample weighs the same: the failed call is as many rows as a good answer
        assert report.score == 50.0
        assert report.error_count == 2
        assert report.function_error_count == 1
        assert report.strategy_scores == {"equals": 50.0, "equals#2": 50.0}

    async def test_function_error_without_strategies_is_one_row(self) -> None:
        async def fn(params: Parameters) -> str:
            raise ValueError("model exploded")

        report = await Scorer().evaluate(make_samples(2), fn)
        assert [(r.name, r.strategy, r.outcome) for r in report.evaluations] == [
            ("s0", None, Outcome.ERROR),
            ("s1", None, Outcome.ERROR),
        ]
        assert report.function_error_count == 2

    async def test_strategy_error_row_and_later_strategies_still_run(self) -> None:
        def broken(sample: EvaluationSample, output: object) -> EvaluationResult:
            raise KeyError("nope")

        report = await Scorer().evaluate(make_samples(1), echo, broken, equals)
        rows = report.evaluations
        assert [(r.strategy, r.outcome) for r in rows] == [
            ("broken", Outcome.ERROR),
            ("equals", Outcome.PASSED),
        ]
        assert rows[0].output == "in0"
        assert rows[0].error is not None and rows[0].error.type == "KeyError"
        assert report.strategy_statistics["broken"].errors == 1

    async def test_strategy_returning_the_wrong_type_is_an_error_row(self) -> None:
        def wrong(sample: EvaluationSample, output: object) -> bool:
            return True

        report = await Scorer().evaluate(make_samples(1), echo, wrong)
        (row,) = report.evaluations
        assert row.outcome is Outcome.ERROR
        assert row.explanation == (
            "TypeError: strategy wrong returned bool, expected an EvaluationResult "
            "(e.g. EvaluationResult.from_boolean(...))"
        )

    async def test_unscored_results_are_counted_apart(self) -> None:
        def judge(sample: EvaluationSample, output: object) -> EvaluationResult:
            return EvaluationResult.unscored("reply was not JSON")

        report = await Scorer().evaluate(make_samples(2), echo, judge, equals)
        assert report.unscored_count == 2
        assert report.passed_count == 2
        assert report.failed_count == 0
        assert report.score == 50.0
        assert report.evaluations[0].score is None

    async def test_timeout_turns_a_slow_call_into_an_error_row(self) -> None:
        never = anyio.Event()

        async def fn(params: Parameters) -> str:
            if params[0] == "in0":
                await never.wait()
            return str(params[0])

        report = await Scorer(concurrency=2, timeout=0.05).evaluate(
            make_samples(2), fn, equals_on_the_loop
        )
        first, second = report.evaluations
        assert first.outcome is Outcome.ERROR
        assert first.error is not None
        assert first.error.type == "TimeoutError"
        assert "did not finish within 0.05 s" in first.error.message
        assert second.outcome is Outcome.PASSED

    async def test_timeout_abandons_a_blocked_sync_function(self) -> None:
        release = threading.Event()

        def fn(params: Parameters) -> str:
            if params[0] == "in0":
                release.wait(timeout=30)
            return str(params[0])

        try:
            report = await Scorer(concurrency=2, timeout=0.05).evaluate(
                make_samples(2), fn, equals_on_the_loop
            )
        finally:
            release.set()
        first, second = report.evaluations
        assert first.error is not None and first.error.type == "TimeoutError"
        assert second.outcome is Outcome.PASSED

    async def test_outer_cancellation_is_not_mistaken_for_the_sample_timeout(self) -> None:
        started = anyio.Event()
        never = anyio.Event()

        async def fn(params: Parameters) -> str:
            started.set()
            await never.wait()
            return ""

        scorer = Scorer(timeout=60)
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(scorer.evaluate, make_samples(1), fn, equals)
                await started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        assert scorer.statistics().rows_done == 0

    async def test_a_timeout_error_raised_by_the_function_is_its_own(self) -> None:
        async def fn(params: Parameters) -> str:
            raise TimeoutError("upstream gateway timed out")

        report = await Scorer(timeout=30).evaluate(make_samples(1), fn, equals)
        (row,) = report.evaluations
        assert row.error is not None
        assert row.error.message == "upstream gateway timed out"

    async def test_cancellation_propagates_and_keeps_finished_rows_in_sinks(
        self, tmp_path: anyio.Path
    ) -> None:
        first_done = anyio.Event()
        never = anyio.Event()

        async def fn(params: Parameters) -> str:
            if params[0] != "in0":
                first_done.set()
                await never.wait()
            return str(params[0])

        sink = JsonlSink(tmp_path / "rows.jsonl")
        scorer = Scorer(concurrency=1, sinks=[sink])
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(scorer.evaluate, make_samples(3), fn, equals)
                await first_done.wait()
                scope.cancel()
        assert scope.cancelled_caught
        rows = (await read_run(tmp_path / "rows.jsonl"))[0]
        assert [(r.name, r.outcome) for r in rows] == [("s0", Outcome.PASSED)]

    @pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
    def test_keyboard_interrupt_from_the_target_stops_the_run_keeping_rows(
        self, is_async: bool, tmp_path: Path
    ) -> None:
        # asyncio re-raises KeyboardInterrupt out of the event loop itself, so run our own
        def body(params: Parameters) -> str:
            if params[0] == "in2":
                raise KeyboardInterrupt
            return str(params[0])

        async def async_body(params: Parameters) -> str:
            return body(params)

        sink = JsonlSink(tmp_path / "rows.jsonl")

        async def main() -> None:
            fn = async_body if is_async else body
            await Scorer(sinks=[sink]).evaluate(make_samples(4), fn, equals)

        with pytest.raises(KeyboardInterrupt):
            anyio.run(main)
        rows = anyio.run(read_run, tmp_path / "rows.jsonl")
        assert [r.name for r in rows[0]] == ["s0", "s1"]
        assert rows[1] is not None and rows[1].complete is False

    @pytest.mark.parametrize("exc_type", [SystemExit, GeneratorExit, _Custom])
    @pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
    async def test_other_base_exceptions_from_the_target_become_error_rows(
        self, exc_type: type[BaseException], is_async: bool
    ) -> None:
        def body(params: Parameters) -> str:
            raise exc_type(3)

        async def async_body(params: Parameters) -> str:
            return body(params)

        report = await Scorer().evaluate(make_samples(2), async_body if is_async else body, equals)
        assert [r.outcome for r in report.evaluations] == [Outcome.ERROR, Outcome.ERROR]
        error = report.evaluations[0].error
        assert error is not None and error.type == exc_type.__name__ and error.message == "3"

    async def test_bad_sample_item_raises_type_error_saying_what_finished(self) -> None:
        with pytest.raises(TypeError, match="Item 1 of the samples is str") as info:
            await Scorer().evaluate([make_samples(1)[0], "oops"], echo, equals)  # type: ignore[list-item]
        assert info.value.__notes__ == ["aeval: 1 row(s) had finished when the run stopped."]


class TestOptions:
    async def test_repeats(self) -> None:
        calls = 0

        async def fn(params: Parameters) -> str:
            nonlocal calls
            calls += 1
            return str(params[0]) if calls % 2 else "different"

        report = await Scorer(repeats=3).evaluate(make_samples(2), fn, equals)
        assert calls == 6
        assert [(r.name, r.repeat) for r in report.evaluations] == [
            ("s0", 0),
            ("s0", 1),
            ("s0", 2),
            ("s1", 0),
            ("s1", 1),
            ("s1", 2),
        ]
        assert report.sample_count == 2
        assert report.call_count == 6
        assert report.passed_count == 3

    async def test_keep_failures_holds_only_failures_but_counts_everything(self) -> None:
        async def fn(params: Parameters) -> str:
            return "x" if params[0] == "in2" else str(params[0])

        report = await Scorer(keep="failures").evaluate(make_samples(5), fn, equals)
        assert [r.name for r in report.evaluations] == ["s2"]
        assert report.evaluation_count == 5
        assert report.score == 80.0
        assert report.holds_all_rows is False

    async def test_close_without_a_loop_detour(self) -> None:
        scorer = Scorer()
        scorer.close()
        with pytest.raises(ScorerClosedError, match="create a new Scorer"):
            await scorer.evaluate(make_samples(1), echo, equals)

    async def test_closed_scorer_refuses(self) -> None:
        async with Scorer() as scorer:
            await scorer.evaluate(make_samples(1), echo, equals)
        assert scorer.closed
        with pytest.raises(ScorerClosedError, match="closed"):
            await scorer.evaluate(make_samples(1), echo, equals)

    @pytest.mark.parametrize("bad", [0, -1, 1.5, True])
    def test_invalid_concurrency(self, bad: object) -> None:
        with pytest.raises(ValueError, match="concurrency must be an integer >= 1"):
            Scorer(bad)  # type: ignore[arg-type]

    async def test_invalid_strategy_rejected_before_anything_runs(self) -> None:
        calls = 0

        async def fn(params: Parameters) -> str:
            nonlocal calls
            calls += 1
            return ""

        class NotAStrategy:
            pass

        with pytest.raises(TypeError, match="has no evaluate"):
            await Scorer().evaluate(make_samples(1), fn, NotAStrategy())
        with pytest.raises(TypeError, match="write NotAStrategy\\(\\)"):
            await Scorer().evaluate(make_samples(1), fn, NotAStrategy)
        with pytest.raises(TypeError, match=r"Strategy 2 is the class ExactMatchStrategy"):
            await Scorer().evaluate(make_samples(1), fn, equals, ExactMatchStrategy)
        assert calls == 0

    async def test_samples_given_as_a_path_string_is_a_clear_error(self) -> None:
        with pytest.raises(TypeError, match=r"Samples\.load"):
            await Scorer().evaluate("samples.yaml", echo, equals)  # type: ignore[arg-type]


SCORER_BUILT_OUTSIDE_A_LOOP = Scorer(concurrency=2)


def test_scorer_built_outside_a_loop_works_inside_one() -> None:
    async def main() -> float:
        report = await SCORER_BUILT_OUTSIDE_A_LOOP.evaluate(make_samples(3), echo, equals)
        return report.score

    assert anyio.run(main) == 100.0
    assert anyio.run(main) == 100.0


class TestStream:
    async def test_rows_in_completion_order_and_a_live_report(self) -> None:
        second_done = anyio.Event()

        async def fn(params: Parameters) -> str:
            if params[0] == "in0":
                await second_done.wait()
            return str(params[0])

        scorer = Scorer(concurrency=2)
        seen: list[str] = []
        async with scorer.stream(make_samples(2), fn, equals) as rows:
            async for row in rows:
                seen.append(row.name)
                if row.name == "s1":
                    assert rows.report.evaluation_count == 1
                    second_done.set()
        assert seen == ["s1", "s0"]
        assert rows.report.evaluation_count == 2
        assert rows.done

    async def test_finish_returns_the_final_report(self) -> None:
        async with Scorer(concurrency=3).stream(make_samples(7), echo, equals) as rows:
            report = await rows.finish()
        assert report.passed_count == 7
        assert [r.name for r in report.evaluations] == [f"s{i}" for i in range(7)]

    async def test_leaving_early_stops_the_run(self) -> None:
        calls = 0

        async def fn(params: Parameters) -> str:
            nonlocal calls
            calls += 1
            return str(params[0])

        async with Scorer(concurrency=1).stream(make_samples(50), fn, equals, buffer=1) as rows:
            async for _row in rows:
                break
        assert calls < 50
        assert not rows.done

    async def test_an_async_source_is_closed_when_the_run_stops_early(self) -> None:
        closed = anyio.Event()

        async def source() -> AsyncIterator[EvaluationSample]:
            try:
                for sample in make_samples(100):
                    yield sample
            finally:
                closed.set()

        async with Scorer(concurrency=2).stream(source(), echo, equals, buffer=1) as rows:
            async for _row in rows:
                break
        assert closed.is_set()

    async def test_source_errors_propagate_unwrapped(self) -> None:
        async def source() -> AsyncIterator[object]:
            yield make_samples(1)[0]
            yield 42

        with pytest.raises(TypeError, match="Item 1 of the samples is int"):
            async with Scorer().stream(source(), echo, equals) as rows:  # type: ignore[arg-type]
                await rows.finish()


class BlockingCheck:
    """A sync strategy that blocks its thread until ``release`` (a moderation API call)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: list[int] = []

    def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
        self.threads.append(threading.get_ident())
        self.entered.set()
        # bounded, so that a regression (the call blocking the event loop) fails, not hangs
        released = self.release.wait(timeout=10)
        return EvaluationResult.from_boolean(released)


async def test_a_blocking_sync_strategy_runs_in_a_thread_and_the_loop_stays_responsive() -> None:
    check = BlockingCheck()
    reports: list[Any] = []
    progressed: list[bool] = []

    async def run() -> None:
        reports.append(await Scorer().evaluate(make_samples(1), echo, check, equals))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await anyio.to_thread.run_sync(check.entered.wait)
        await anyio.lowlevel.checkpoint()  # another coroutine runs while the check blocks
        progressed.append(not check.release.is_set())
        check.release.set()
    assert progressed == [True]
    assert reports[0].passed_count == 2
    assert check.threads and check.threads[0] != threading.get_ident()


async def test_a_blocking_sync_strategy_is_bounded_by_the_timeout() -> None:
    check = BlockingCheck()
    try:
        async with Scorer(timeout=0.05) as scorer:
            report = await scorer.evaluate(make_samples(2), echo, check, equals_on_the_loop)
    finally:
        check.release.set()
    errors = [row.error for row in report.evaluations if row.strategy == "BlockingCheck"]
    assert [(e.type, e.message) for e in errors if e is not None] == [
        (
            "TimeoutError",
            "the strategy BlockingCheck did not finish within 0.05 s (Scorer timeout)",
        )
    ] * 2
    assert report.passed_count == 2  # the other strategy's rows


async def test_built_in_text_checks_run_on_the_event_loop_and_plain_functions_do_not() -> None:
    seen: list[int] = []

    def plain(sample: EvaluationSample, output: object) -> EvaluationResult:
        seen.append(threading.get_ident())
        return EvaluationResult.passing()

    class Recording(ExactMatchStrategy):
        def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
            seen.append(threading.get_ident())
            return super().evaluate(sample, output)

    report = await Scorer().evaluate(make_samples(1), echo, Recording(), plain)
    assert report.passed_count == 2
    assert seen[0] == threading.get_ident() != seen[1]


async def test_progress_shows_on_stderr_as_lines_when_not_on_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with Scorer(progress=True) as scorer:
        report = await scorer.evaluate(make_samples(4), echo, equals)
        async with scorer.stream(make_samples(2), echo, equals) as rows:
            await rows.finish()
    captured = capsys.readouterr()
    assert report.passed_count == 4 and captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == "aeval: evaluating 4 samples"
    assert lines[-4].startswith("aeval: done: 4/4 samples | 4 rows | pass 100.0% | 0 errors")
    assert lines[-3] == "aeval: evaluating 2 samples"
    assert lines[-1].startswith("aeval: done: 2/2 samples | 2 rows | pass 100.0% | 0 errors")


async def test_progress_is_rich_s_live_bar_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    report = await Scorer(progress=True).evaluate(make_samples(3), echo, equals)
    captured = capsys.readouterr()
    assert report.passed_count == 3 and captured.out == ""
    assert "aeval: evaluating" not in captured.err
    assert "3/3" in captured.err and "3 rows | pass 100.0%" in captured.err


def test_progress_takes_a_boolean() -> None:
    with pytest.raises(TypeError, match="progress must be True or False, got 'yes'"):
        Scorer(progress="yes")  # type: ignore[arg-type]
