"""A run's workers: a fixed pool of tasks, and the async sample source they share."""

from __future__ import annotations

import functools
import sys
from collections import deque
from collections.abc import AsyncIterable, Callable, Coroutine, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import anyio

from .._samples import EvaluationSample
from .._samples._sources import batches_of
from ._executor import IndexedSample, check_sample

__all__ = ["AsyncWork", "IterWork", "Work", "run_workers", "running_asyncio"]

_T = TypeVar("_T")
Item = tuple[int, int, EvaluationSample]
"""``(index, repeat, sample)``: one call of the function under test."""


class Work(Protocol):
    """The samples a run's workers share: each worker takes the next item itself."""

    take: Callable[[], Item]
    """The next item when one is at hand (no suspension), else raises :attr:`nothing` (a
    deque's ``popleft``, an iterator's ``next``: no Python frame per item)."""
    nothing: type[Exception]
    """What :attr:`take` raises when no item is at hand, and only then."""

    async def next(self) -> Item | None:
        """The next item, waiting for the source; ``None`` once it is exhausted."""


class IterWork:
    """:class:`Work` of an iterator: every item is at hand."""

    def __init__(self, items: Iterator[Item]) -> None:
        self.take: Callable[[], Item] = functools.partial(next, items)
        self.nothing: type[Exception] = StopIteration  # a generator raises no other

    async def next(self) -> Item | None:
        return None


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
    """Hands ``(index, repeat, sample)`` from an async iterable to workers.

    Each worker takes the next item itself: from the items already read when there are some
    (no lock, no suspension), else under a lock it reads the next batch of the source (a
    chunk of a JSONL file, or one item of any other source: see ``batches_of``). No feeder
    task or channel sits between the source and the workers, and nothing is read ahead of
    the batch in hand. An error of the source, or a sample ``check`` refuses, is raised by
    the worker that reaches it, once the samples before it have been handed out.

    ``check`` binds a sample's parameters to the function's signature, so it is called once
    per distinct set of parameter names.
    """

    def __init__(
        self,
        samples: AsyncIterable[EvaluationSample | IndexedSample],
        repeats: int,
        check: Callable[[EvaluationSample], None] | None,
    ) -> None:
        self._source = samples
        self._batches = batches_of(samples)
        self._repeats = repeats
        self._check = check
        self._fits: set[tuple[str | None, ...]] = set()
        self._lock = anyio.Lock(fast_acquire=True)
        self._pending: deque[Item] = deque()
        """The items read and not handed out yet."""
        self.take: Callable[[], Item] = self._pending.popleft
        self.nothing: type[Exception] = IndexError
        self._index = 0
        self._exhausted = False
        self._failure: Exception | None = None

    async def next(self) -> Item | None:
        pending = self._pending
        if pending:
            return pending.popleft()
        async with self._lock:
            while not pending:
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise failure
                if self._exhausted:
                    return None
                try:
                    batch = await anext(self._batches)
                except StopAsyncIteration:
                    self._exhausted = True
                    return None
                except BaseException:
                    self._exhausted = True  # raised once, by this worker; the others stop
                    raise
                self._take(batch)
            return pending.popleft()

    def _take(self, batch: Sequence[EvaluationSample | IndexedSample]) -> None:
        append = self._pending.append
        repeats = range(self._repeats)
        check = self._check
        fits = self._fits
        fitted = None  # the names of the last sample checked: samples read together share them
        single = self._repeats == 1
        index = self._index
        for item in batch:
            at = index
            index += 1
            try:
                if type(item) is EvaluationSample:
                    sample = item
                elif type(item) is IndexedSample:
                    at, sample = item.index, item.sample
                else:
                    sample = check_sample(item, at)
                if check is not None and (names := sample.parameters.names) is not fitted:
                    if names not in fits:
                        check(sample)
                        fits.add(names)
                    fitted = names
            except Exception as exc:
                self._index = index
                self._failure = exc
                self._exhausted = True
                return
            if single:
                append((at, 0, sample))
            else:
                for repeat in repeats:
                    append((at, repeat, sample))
        self._index = index

    async def aclose(self) -> None:
        await self._batches.aclose()
        aclose = getattr(self._source, "aclose", None)  # also when no batch was read
        if aclose is not None:
            await aclose()
