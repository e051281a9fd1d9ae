"""One recorder, eight threads recording into it at once while snapshots are taken: no event
is lost or seen half recorded, each snapshot holds a prefix of each thread's calls, and the
most events are kept with the rest counted as dropped."""

from __future__ import annotations

import contextvars
import threading

import pytest

import aeval
from aeval.trace import (
    Trace,
    TraceLimits,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
)

THREADS = 8
CALLS = 300


@aeval.tool
def lookup(thread: int, index: int, extra: list[int] | None = None) -> str:
    return f"{thread}:{index}"


def _work(thread: int, barrier: threading.Barrier) -> None:
    barrier.wait()
    for index in range(CALLS):
        if index % 3 == 0:
            lookup(thread, index, [index])  # a mutable argument: kept at call time
        elif index % 3 == 1:
            lookup(thread, index)
        else:
            record_tool_call(
                "lookup", {"thread": thread, "index": index}, result=f"{thread}:{index}"
            )
        if index % 50 == 0:
            record_model_call(model=f"m{thread}", prompt_tokens=index)
            record_retrieval([f"doc {thread} {index}"], query=str(thread))


def _check(trace: Trace) -> dict[int, int]:
    """Each call whole and each thread's calls a prefix of them; their counts by thread."""
    seen: dict[int, list[int]] = {thread: [] for thread in range(THREADS)}
    for call in trace.tool_calls:
        thread, index = call.arguments["thread"], call.arguments["index"]
        assert call.name == "lookup" and call.error is None and call.mocked is False
        assert call.result == f"{thread}:{index}"
        assert call.started is not None and call.ended is not None
        assert call.started <= call.ended
        if index % 3 == 0:
            assert call.arguments["extra"] == [index]
        seen[thread].append(index)
    for indexes in seen.values():
        assert indexes == list(range(len(indexes)))
    for model in trace.model_calls:
        assert model.model is not None and model.model.startswith("m")
    for retrieval in trace.retrievals:
        assert retrieval.documents and retrieval.documents[0].text is not None
    return {thread: len(indexes) for thread, indexes in seen.items()}


def _run(limits: TraceLimits) -> tuple[Trace, list[Trace]]:
    barrier = threading.Barrier(THREADS + 1)
    snapshots: list[Trace] = []
    with recording(limits=limits) as recorder:
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(_work, number, barrier))
            for number in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        barrier.wait()
        while any(thread.is_alive() for thread in threads):
            snapshot = recorder.snapshot()
            if snapshot is not None:
                snapshots.append(snapshot)
        for thread in threads:
            thread.join()
    return recorder.trace(), snapshots


def test_threads_recording_while_snapshots_are_taken_lose_nothing() -> None:
    final, snapshots = _run(TraceLimits(max_events=10_000))
    models = retrievals = THREADS * (CALLS // 50)
    assert final.dropped == 0
    assert _check(final) == dict.fromkeys(range(THREADS), CALLS)
    assert len(final.model_calls) == models and len(final.retrievals) == retrievals
    before = dict.fromkeys(range(THREADS), 0)
    for snapshot in snapshots:
        counts = _check(snapshot)
        assert all(counts[thread] >= before[thread] for thread in counts)
        before = counts
        assert snapshot.dropped == 0


@pytest.mark.parametrize("most", [1, 500, 2000])
def test_threads_past_the_most_events_keep_that_many_and_count_the_rest(most: int) -> None:
    final, snapshots = _run(TraceLimits(max_events=most))
    total = THREADS * CALLS + 2 * THREADS * (CALLS // 50)
    kept = len(final.tool_calls) + len(final.model_calls) + len(final.retrievals)
    assert kept == most and final.dropped == total - most
    _check(final)
    for snapshot in snapshots:
        _check(snapshot)
        events = len(snapshot.tool_calls) + len(snapshot.model_calls) + len(snapshot.retrievals)
        assert events <= most
