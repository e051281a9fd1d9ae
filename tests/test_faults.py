"""Faults that must neither crash a run, hang it nor lose a row (issue 8), at the Scorer."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from aeval import (
    AbandonedCallsError,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    ModelHTTPError,
    Outcome,
    Parameters,
    Samples,
    Scorer,
    evaluate_sync,
    read_run,
)
from aeval.strategies import NotBlankStrategy

pytestmark = pytest.mark.anyio


class Unprintable:
    def __str__(self) -> str:
        raise ZeroDivisionError("no text")

    __repr__ = __str__


def cyclic() -> list[Any]:
    items: list[Any] = ["a"]
    items.append(items)
    return items


HOSTILE: dict[str, Any] = {
    "surrogate": "cut inside an emoji \ud83d",
    "tuple-keys": {(1, 2): "x", "ok": 1},
    "big-int": 2**80,
    "huge-int": 7 * 10**5000 + 1,  # too long for str() (over 4,300 digits)
    "cyclic": cyclic(),
    "unprintable": Unprintable(),
    "deep": [],
}


def _deep() -> list[Any]:
    value: list[Any] = []
    for _ in range(600):
        value = [value]
    return value


HOSTILE["deep"] = _deep()


def anything(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.passing()


async def test_any_output_becomes_a_row_in_every_sink_and_every_format(tmp_path: Path) -> None:
    samples = Samples(EvaluationSample(name, [name], None) for name in HOSTILE)

    async def target(params: Parameters) -> Any:
        return HOSTILE[params[0]]

    sink = JsonlSink(tmp_path / "rows.jsonl")
    async with Scorer(concurrency=3, sinks=[sink]) as scorer:
        report = await scorer.evaluate(samples, target, anything, NotBlankStrategy())
    assert report.evaluation_count == 2 * len(HOSTILE)
    rows, run = await read_run(tmp_path / "rows.jsonl")
    assert len(rows) == report.evaluation_count
    assert run is not None and run.complete
    by_name = {row.name: row for row in rows}
    assert by_name["big-int"].output == str(2**80)
    assert by_name["huge-int"].output == "<int of 5001 digits: 7.00000e+5000, ending ...000001>"
    assert by_name["surrogate"].output == "cut inside an emoji \\ud83d"
    lines = [orjson.loads(line) for line in (tmp_path / "rows.jsonl").read_bytes().splitlines()]
    noted = {line["name"] for line in lines if line.get("notes")}
    assert noted == set(HOSTILE)
    files = await report.save(tmp_path / "out", formats=["markdown", "json", "junit", "html"])
    assert [path.name for path in files] == [
        "report.md",
        "report.json",
        "report.xml",
        "report.html",
    ]
    for path in files:
        assert path.read_bytes()


class FailingSink:
    def __init__(self, fail_on: int) -> None:
        self.fail_on = fail_on
        self.rows: list[EvaluationRow] = []

    def __repr__(self) -> str:
        return "FailingSink()"

    async def send(self, row: EvaluationRow) -> None:
        if len(self.rows) + 1 == self.fail_on:
            raise OSError("disk full")
        self.rows.append(row)

    async def flush(self) -> None:
        pass


async def echo(params: Parameters) -> str:
    return str(params[0])


async def test_a_failing_sink_is_named_and_the_others_get_every_row(tmp_path: Path) -> None:
    samples = Samples(EvaluationSample(f"s{i}", [f"q{i}"], f"q{i}") for i in range(5))
    broken = FailingSink(fail_on=3)
    jsonl = JsonlSink(tmp_path / "rows.jsonl")
    async with Scorer(sinks=[broken, jsonl]) as scorer:
        report = await scorer.evaluate(samples, echo, anything)
    assert len(broken.rows) == 2
    rows, _ = await read_run(tmp_path / "rows.jsonl")
    assert len(rows) == 5 == report.evaluation_count
    (warning,) = report.warnings
    assert warning == (
        "sink FailingSink() failed on row 's2' (OSError: disk full); it received 2 row(s) and "
        "none after that"
    )


async def test_a_run_that_stops_says_truthfully_where_its_rows_are() -> None:
    broken = FailingSink(fail_on=1)
    with pytest.raises(TypeError) as info:
        async with Scorer(sinks=[broken]) as scorer:
            await scorer.evaluate(
                [EvaluationSample("a", ["q"], "q"), "oops"],  # type: ignore[list-item]
                echo,
                anything,
            )
    assert info.value.__notes__ == ["aeval: 1 row(s) had finished when the run stopped."]


ABANDON_SCRIPT = textwrap.dedent(
    """
    import threading
    from aeval import EvaluationResult, EvaluationSample, Samples, evaluate_sync

    def stuck(params):
        threading.Event().wait()  # never returns

    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(40))
    report = evaluate_sync(
        samples,
        stuck,
        lambda sample, output: EvaluationResult.passing(),
        concurrency=20,
        timeout=0.05,
        max_abandoned=100,
    )
    print(report.error_count, sum(t.name == "aeval worker" for t in threading.enumerate()))
    """
)


def test_abandoned_sync_calls_do_not_keep_the_process_alive(tmp_path: Path) -> None:
    script = tmp_path / "stuck.py"
    script.write_text(ABANDON_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    errors, threads = map(int, result.stdout.split())
    assert errors == 40
    assert threads == 40  # every abandoned call still holds its daemon thread, none more


async def test_too_many_abandoned_calls_stop_the_run_with_a_clear_error(tmp_path: Path) -> None:
    release = threading.Event()

    def stuck(params: Parameters) -> str:
        release.wait()
        return "late"

    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(10))
    sink = JsonlSink(tmp_path / "rows.jsonl")
    try:
        with pytest.raises(AbandonedCallsError, match=r"3 calls .* \(the most allowed is 3\)"):
            async with Scorer(timeout=0.01, max_abandoned=3, sinks=[sink]) as scorer:
                await scorer.evaluate(samples, stuck, anything)
    finally:
        release.set()
    rows, run = await read_run(tmp_path / "rows.jsonl")
    assert [row.name for row in rows] == ["s0", "s1", "s2"]
    assert all(row.error is not None and row.error.type == "TimeoutError" for row in rows)
    assert run is not None and run.complete is False


async def test_abandoned_sync_strategy_calls_count_against_the_same_cap() -> None:
    release = threading.Event()

    def stuck(sample: EvaluationSample, output: object) -> EvaluationResult:
        release.wait()
        return EvaluationResult.passing()

    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(10))
    rows: list[EvaluationRow] = []
    try:
        with pytest.raises(AbandonedCallsError, match=r"2 calls .*or of a sync strategy"):
            async with (
                Scorer(timeout=0.01, max_abandoned=2) as scorer,
                scorer.stream(samples, echo, stuck) as stream,
            ):
                rows.extend([row async for row in stream])
    finally:
        release.set()
    assert [row.name for row in rows] == ["s0", "s1"]
    assert all(row.error is not None and row.error.type == "TimeoutError" for row in rows)


async def test_an_error_raised_after_retries_counts_them_once_per_call() -> None:
    def judge(sample: EvaluationSample, output: object) -> EvaluationResult:
        error = ModelHTTPError("HTTP 503", status=503, url="http://x", body="")
        error.retries = 3
        raise error

    async def failing_call(params: Parameters) -> str:
        error = ModelHTTPError("HTTP 503", status=503, url="http://y", body="")
        error.retries = 2
        raise error

    samples = Samples([EvaluationSample("a", ["q"], None)])
    report = await Scorer().evaluate(samples, echo, judge)
    assert report.usage.retries == 3
    assert report.evaluations[0].metadata == {"retries": 3}
    report = await Scorer().evaluate(samples, failing_call, judge, anything)
    assert [row.outcome for row in report.evaluations] == [Outcome.ERROR, Outcome.ERROR]
    assert report.usage.retries == 2


async def test_secrets_are_redacted_before_sinks_and_report(tmp_path: Path) -> None:
    secret = "sk-very-secret-123"

    async def leaky(params: Parameters) -> Any:
        return {"echo": f"Authorization: Bearer {secret}", "n": 1}

    def judge(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.failing(f"saw {secret}").with_metadata({"raw": [secret]})

    def boom(sample: EvaluationSample, output: object) -> EvaluationResult:
        raise RuntimeError(f"key {secret} rejected")

    sink = JsonlSink(tmp_path / "rows.jsonl")
    samples = Samples([EvaluationSample("a", ["q"], None)])
    async with Scorer(sinks=[sink], redact=[secret, "ab"]) as scorer:
        report = await scorer.evaluate(samples, leaky, judge, boom)
    assert secret not in (tmp_path / "rows.jsonl").read_text()
    for format in ("markdown", "json", "junit", "html"):
        assert secret not in report.format(format)
    judged, raised = report.evaluations
    assert judged.output == {"echo": "Authorization: Bearer [REDACTED]", "n": 1}
    assert judged.explanation == "saw [REDACTED]"
    assert judged.metadata == {"raw": ["[REDACTED]"]}
    assert raised.error is not None and raised.error.message == "key [REDACTED] rejected"
    assert "[REDACTED]" in (raised.error.traceback or "")


async def test_redact_takes_a_list_not_a_string() -> None:
    with pytest.raises(TypeError, match="not one string"):
        Scorer(redact="secret")


def test_sync_run_survives_a_target_that_exits(tmp_path: Path) -> None:
    script = tmp_path / "exits.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from aeval import EvaluationResult, EvaluationSample, Samples, evaluate_sync

            def quits(params):
                sys.exit(0)

            report = evaluate_sync(
                Samples([EvaluationSample("a", [1], None)]),
                quits,
                lambda sample, output: EvaluationResult.passing(),
            )
            print(report.evaluations[0].outcome.value, report.evaluations[0].error.type)
            """
        )
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout) == (0, "error SystemExit\n"), result.stderr


async def test_every_timed_out_call_gives_its_row_at_full_concurrency() -> None:
    release = threading.Event()

    def slow(params: Parameters) -> str:
        release.wait(5)
        return "late"

    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(4))
    try:
        report = await Scorer(concurrency=4, timeout=0.01).evaluate(samples, slow, anything)
    finally:
        release.set()
    assert report.error_count == 4


STRATEGY_EXITS = """\
import sys
from aeval import EvaluationResult, EvaluationSample, evaluate_sync

class Boom(BaseException):
    pass

def exits(sample, output):
    sys.exit(0)

def interrupts(sample, output):
    raise KeyboardInterrupt

async def custom(sample, output):
    raise Boom("boom")

def ok(sample, output):
    return EvaluationResult.from_boolean(True)

samples = [EvaluationSample(name, ["q"], "x") for name in "ab"]
report = evaluate_sync(samples, lambda q: "x", exits, interrupts, custom, ok)
for row in report.evaluations:
    print(row.name, row.strategy, row.outcome.value, row.error)
"""


def test_a_strategy_that_raises_a_base_exception_gives_an_error_row_and_the_run_ends() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STRATEGY_EXITS],
        capture_output=True,
        text=True,
        timeout=60,  # it used to hang at interpreter shutdown
        check=False,
    )
    assert done.returncode == 0, done.stderr
    advice = ": a strategy cannot stop the run; return an EvaluationResult or raise an Exception"
    expected = []
    for name in "ab":
        expected += [
            f"{name} exits error RuntimeError: strategy exits raised SystemExit (0){advice}",
            f"{name} interrupts error RuntimeError: strategy interrupts raised "
            f"KeyboardInterrupt{advice}",
            f"{name} custom error RuntimeError: strategy custom raised Boom (boom){advice}",
            f"{name} ok passed None",
        ]
    assert done.stdout.splitlines() == expected


async def _awaits_a_cancelled_task() -> None:
    async def forever() -> None:
        await anyio.sleep_forever()

    task = asyncio.get_running_loop().create_task(forever())
    await asyncio.sleep(0)
    task.cancel()  # something else cancels the task this code shares
    await task


async def test_a_cancelled_error_from_the_target_or_a_strategy_is_an_error_row() -> None:
    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(10))

    async def target(number: int) -> str:
        if number == 3:
            await _awaits_a_cancelled_task()
        return "answer"

    async def shared(sample: EvaluationSample, output: object) -> EvaluationResult:
        if sample.name == "s5":
            await _awaits_a_cancelled_task()
        return EvaluationResult.passing()

    def raises(sample: EvaluationSample, output: object) -> EvaluationResult:
        if sample.name == "s7":
            raise asyncio.CancelledError
        return EvaluationResult.passing()

    async with Scorer(concurrency=2) as scorer:
        report = await scorer.evaluate(samples, target, shared, raises)
    assert report.sample_count == 10 and report.evaluation_count == 20
    assert report.complete
    errors = {(row.name, row.strategy): row.error for row in report.evaluations if row.error}
    assert sorted(errors) == [
        ("s3", "raises"),
        ("s3", "shared"),
        ("s5", "shared"),
        ("s7", "raises"),
    ]
    for (name, strategy), error in errors.items():
        assert error.type == "CancelledError"
        assert "but the run was not cancelled" in error.message
        who = "the function under test" if name == "s3" else f"strategy {strategy}"
        assert error.message.startswith(f"{who} raised CancelledError")
        assert error.source == ("function" if name == "s3" else "strategy")
    assert report.function_error_count == 1


async def test_a_cancelled_error_from_a_sink_drops_the_sink_not_the_samples() -> None:
    class SharedSink:
        async def send(self, row: EvaluationRow) -> None:
            if row.name == "s1":
                await _awaits_a_cancelled_task()

        async def flush(self) -> None:
            pass

    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(4))
    async with Scorer(concurrency=2, sinks=[SharedSink()]) as scorer:
        report = await scorer.evaluate(samples, lambda n: n, anything)
    assert report.sample_count == 4 and report.complete
    assert len(report.warnings) == 1
    assert "failed on row 's1' (StrayCancellation: sink" in report.warnings[0]


async def test_a_real_cancellation_during_a_strategy_still_stops_the_run() -> None:
    started = anyio.Event()

    async def waits(sample: EvaluationSample, output: object) -> EvaluationResult:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    samples = Samples(EvaluationSample(f"s{i}", [i], None) for i in range(4))
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(Scorer(concurrency=2).evaluate, samples, lambda n: n, waits)
            await started.wait()
            scope.cancel()
    assert scope.cancelled_caught


def test_a_report_short_of_its_samples_is_never_complete() -> None:
    class Short:
        """Says it holds 3 samples, yields 1: the Scorer reaches its end with 2 missing."""

        def __len__(self) -> int:
            return 3

        def __iter__(self) -> Iterator[EvaluationSample]:
            return iter([EvaluationSample("s0", ["q"], None)])

    def check(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.passing()

    report = evaluate_sync(Short(), lambda q: "x", check, repeats=2)
    assert not report.complete and not report.run.complete
    assert report.warnings == (
        "only 2 of the 6 calls expected were evaluated (1 of 3 samples): the run is not complete",
    )
    rebuilt = EvaluationReport(report.evaluations, run=report.run.replace(complete=True))
    assert not rebuilt.complete
