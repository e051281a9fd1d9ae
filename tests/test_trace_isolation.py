"""Each sample's trace holds exactly its own calls: concurrent tasks, nested task groups, the
tasks a sample starts, threads running in a copy of its context; calls made elsewhere are
ignored."""

from __future__ import annotations

import contextvars
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import anyio.to_thread
import pytest

import aeval
from aeval.trace import (
    Trace,
    current,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
)

pytestmark = pytest.mark.anyio


@aeval.tool
async def async_tool(sample: int, step: int) -> str:
    return f"{sample}.{step}"


@aeval.tool
def sync_tool(sample: int, step: int) -> str:
    return f"{sample}.{step}"


def own_steps(trace: Trace) -> set[tuple[int, int]]:
    steps = {(call.arguments["sample"], call.arguments["step"]) for call in trace.tool_calls}
    steps |= {
        (int(r.query.split(".")[0]), int(r.query.split(".")[1]))
        for r in trace.retrievals
        if r.query is not None
    }
    steps |= {
        (int(m.model.split(".")[0]), int(m.model.split(".")[1]))
        for m in trace.model_calls
        if m.model is not None
    }
    return steps


async def test_concurrent_samples_each_keep_exactly_their_own_calls() -> None:
    samples, rng = 200, random.Random(21)
    steps = {sample: rng.randint(1, 5) for sample in range(samples)}
    gates = {(s, i): anyio.Event() for s in range(samples) for i in range(steps[s])}
    done = {key: anyio.Event() for key in gates}
    traces: dict[int, Trace | None] = {}

    async def record(sample: int, step: int) -> None:
        kind = (sample + step) % 4
        if kind == 0:
            await async_tool(sample, step)
        elif kind == 1:
            sync_tool(sample, step)
        elif kind == 2:
            record_retrieval([f"doc {sample}"], query=f"{sample}.{step}")
        else:
            record_model_call(model=f"{sample}.{step}")

    async def run_sample(sample: int) -> None:
        with recording() as recorder:
            async with anyio.create_task_group() as group:
                for step in range(steps[sample]):
                    await gates[(sample, step)].wait()
                    if step % 2:
                        group.start_soon(record, sample, step)
                    else:
                        await record(sample, step)
                    done[(sample, step)].set()
            traces[sample] = recorder.snapshot()

    remaining = {sample: list(range(count)) for sample, count in steps.items()}
    schedule: list[tuple[int, int]] = []  # each sample's steps in order, samples interleaved
    while remaining:
        sample = rng.choice(sorted(remaining))
        schedule.append((sample, remaining[sample].pop(0)))
        if not remaining[sample]:
            del remaining[sample]

    async with anyio.create_task_group() as group:
        for sample in range(samples):
            group.start_soon(run_sample, sample)
        for key in schedule:
            gates[key].set()
            await done[key].wait()

    assert len(traces) == samples
    for sample, trace in traces.items():
        assert trace is not None
        assert own_steps(trace) == {(sample, step) for step in range(steps[sample])}
        assert len(list(trace.events())) == steps[sample]


async def test_calls_in_nested_task_groups_belong_to_the_sample() -> None:
    async def inner(level: int) -> None:
        await async_tool(0, level)
        if level < 3:
            async with anyio.create_task_group() as group:
                group.start_soon(inner, level + 1)
                group.start_soon(async_tool, 1, level)

    with recording() as recorder:
        async with anyio.create_task_group() as group:
            group.start_soon(inner, 0)
    trace = recorder.trace()
    assert sorted((c.arguments["sample"], c.arguments["step"]) for c in trace.tool_calls) == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2),
    ]  # fmt: skip


def test_threads_that_run_in_a_copy_of_the_context_record_into_the_sample() -> None:
    results: dict[int, Trace] = {}
    barrier = threading.Barrier(8)

    def call(sample: int, step: int) -> None:
        barrier.wait()
        sync_tool(sample, step)

    def run_sample(sample: int, pool: ThreadPoolExecutor) -> None:
        with recording() as recorder:
            futures = [
                pool.submit(contextvars.copy_context().run, call, sample, step) for step in range(2)
            ]
            for future in futures:
                future.result()
        results[sample] = recorder.trace()

    with ThreadPoolExecutor(8) as pool, ThreadPoolExecutor(4) as samples:
        list(samples.map(lambda sample: run_sample(sample, pool), range(4)))
    for sample, trace in results.items():
        assert own_steps(trace) == {(sample, 0), (sample, 1)}


async def test_anyio_worker_threads_carry_the_sample_s_context() -> None:
    with recording() as recorder:
        await anyio.to_thread.run_sync(sync_tool, 3, 1)
    assert own_steps(recorder.trace()) == {(3, 1)}


def test_calls_outside_any_recording_are_ignored_never_attached_to_a_sample() -> None:
    started, finished = threading.Event(), threading.Event()

    def stray() -> None:  # a thread that did not copy the context: no sample is current
        started.wait()
        sync_tool(99, 0)
        record_tool_call("stray", {})
        assert current() is None
        finished.set()

    thread = threading.Thread(target=stray)
    thread.start()
    with recording() as recorder:
        started.set()
        finished.wait()
        sync_tool(1, 0)
    thread.join()
    assert own_steps(recorder.trace()) == {(1, 0)}


async def test_a_target_that_raises_after_two_calls_keeps_them() -> None:
    async def target() -> Any:
        await async_tool(5, 0)
        sync_tool(5, 1)
        raise RuntimeError("the model gave up")

    with recording() as recorder, pytest.raises(RuntimeError):
        await target()
    trace = recorder.snapshot()
    assert trace is not None and own_steps(trace) == {(5, 0), (5, 1)}


async def test_a_recording_inside_a_capture_is_separate() -> None:
    async with aeval.trace.capture() as outer:
        await async_tool(1, 0)
        with recording() as inner:
            await async_tool(2, 0)
        await async_tool(1, 1)
    assert own_steps(outer.trace) == {(1, 0), (1, 1)}
    assert own_steps(inner.trace()) == {(2, 0)}
