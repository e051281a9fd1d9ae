"""The engine on anyio's trio backend: evaluation, sync targets, sinks and saved reports."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest

from aeval import EvaluationSample, JsonlSink, Parameters, Samples, Scorer, read_run
from aeval.strategies import ExactMatchStrategy

pytest.importorskip("trio")


def shout(params: Parameters) -> str:
    return str(params[0]).upper()


async def whisper(question: str) -> str:
    return question.lower()


def test_a_run_with_a_sink_and_saved_reports_works_on_trio(tmp_path: Path) -> None:
    samples = Samples(
        EvaluationSample(f"s{i}", [f"Q{i}"], f"Q{i}" if i % 2 else "nope") for i in range(6)
    )

    async def main() -> list[Path]:
        sink = JsonlSink(tmp_path / "rows.jsonl")
        async with Scorer(concurrency=3, timeout=5, sinks=[sink]) as scorer:
            report = await scorer.evaluate(samples, shout, ExactMatchStrategy())
        async with (
            Scorer(concurrency=2) as scorer,
            scorer.stream(samples, whisper, ExactMatchStrategy()) as rows,
        ):
            streamed = [row async for row in rows]
        assert report.passed_count == 3
        assert len(streamed) == 6
        return await report.save(tmp_path / "out", formats=["markdown", "json", "junit", "html"])

    files = anyio.run(main, backend="trio")
    assert [path.name for path in files] == [
        "report.md",
        "report.json",
        "report.xml",
        "report.html",
    ]
    rows, run = anyio.run(read_run, tmp_path / "rows.jsonl", backend="trio")
    assert len(rows) == 6 and run is not None and run.complete


def test_cancellation_on_trio_stops_the_run_and_a_foreign_cancelled_error_is_a_row() -> None:
    samples = Samples(EvaluationSample(f"s{i}", [f"q{i}"], None) for i in range(4))

    async def foreign(question: str) -> str:
        if question == "q1":
            raise asyncio.CancelledError  # not trio's: nothing is being cancelled
        return question

    async def main() -> tuple[bool, int, list[str]]:
        started = anyio.Event()

        async def waits(question: str) -> str:
            started.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(Scorer(concurrency=2).evaluate, samples, waits)
                await started.wait()
                scope.cancel()
        report = await Scorer(concurrency=2).evaluate(samples, foreign, ExactMatchStrategy())
        errors = [str(row.error) for row in report.evaluations if row.error is not None]
        return scope.cancelled_caught, report.sample_count, errors

    assert anyio.run(main, backend="trio") == (True, 4, ["CancelledError"])


def test_the_ray_executor_says_it_runs_on_asyncio_only() -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'aeval-engine[ray]'")
    from aeval import ExecutorError
    from aeval.ray import RayExecutor

    async def main() -> None:
        samples = Samples([EvaluationSample("s", ["q"], "Q")])
        await Scorer(executor=RayExecutor(workers=1)).evaluate(samples, shout)

    with pytest.raises(ExecutorError, match="the Ray executor runs on asyncio"):
        anyio.run(main, backend="trio")
