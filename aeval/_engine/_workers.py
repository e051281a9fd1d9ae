"""A run's workers: a fixed pool of tasks, and the async sample source they share."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import AsyncIterable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

from .._samples import EvaluationSample
from ._executor import IndexedSample, check_sample

__all__ = ["AsyncWork", "run_workers", "running_asyncio"]

_T = TypeVar("_T")


async def run_workers(
    count: int, worker: Callable[[_T], Coroutine[Any, Any, None]], work: _T
) -> None:
    """Run ``count`` copies of ``worker(work)`` in a task group and wait for them all.

    On asyncio this is the stdlib's ``asyncio.TaskGroup`` (the same structured concurrency: the
    group owns its tasks, cancels the rest when one fails and propagates the errors); elsewhere
    an anyio task group. The reason is cost: an anyio task takes about ten times as long as an
    asyncio task to spawn and retire (measured here: ~25 µs against ~3 µs), which at a
    concurrency of 500 is several percent of a 200 ms run. Cancel scopes, ``fail_after`` and
    worker threads from anyio work unchanged inside these tasks.
    """
    asyncio = running_asyncio()
    if asyncio is not None:
        async with asyncio.TaskGroup() as group:
            for _ in range(count):
                group.create_task(worker(work))
        return
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(worker, work)


def running_asyncio() -> Any:
    """The ``asyncio`` module when an asyncio loop runs this task, else ``None``.

    A program that never imported asyncio is not running it, so ``import aeval`` needs no
    asyncio of its own.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return asyncio


class AsyncWork:
    """Hands ``(index, repeat, sample)`` from an async iterable to workers, one at a time.

    Each worker pulls the next item itself under a lock, so no feeder task or channel sits
    between the source and the workers, and nothing is read ahead of the work in flight.
    """

    def __init__(
        self,
        samples: AsyncIterable[EvaluationSample | IndexedSample],
        repeats: int,
        check: Callable[[EvaluationSample], None] | None,
    ) -> None:
        self._iterator = aiter(samples)
        self._repeats = repeats
        self._check = check
        self._lock = anyio.Lock(fast_acquire=True)
        self._pending: deque[tuple[int, int, EvaluationSample]] = deque()
        self._index = 0
        self._exhausted = False

    async def next(self) -> tuple[int, int, EvaluationSample] | None:
        async with self._lock:
            if self._pending:
                return self._pending.popleft()
            if self._exhausted:
                return None
            try:
                item = await anext(self._iterator)
            except StopAsyncIteration:
                self._exhausted = True
                return None
            except BaseException:
                self._exhausted = True  # raised once, by this worker; the others stop
                raise
            index = self._index
            self._index = index + 1
            try:
                if type(item) is IndexedSample:
                    index, sample = item.index, item.sample
                else:
                    sample = check_sample(item, index)
                if self._check is not None:
                    self._check(sample)
            except Exception:
                self._exhausted = True
                raise
            self._pending.extend((index, repeat, sample) for repeat in range(1, self._repeats))
            return index, 0, sample

    async def aclose(self) -> None:
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()
