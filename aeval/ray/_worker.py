"""The worker: an async Ray actor running aeval's own Scorer over the samples it is handed."""

from __future__ import annotations

import asyncio
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio

from .._engine._executor import IndexedSample
from .._engine._scorer import Scorer
from .._reporting._results import EvaluationRow
from ._wire import dumps, loads

__all__ = ["EvaluationWorker"]

_LINGER = 0.05
"""Seconds a worker waits for more finished samples once one is, before answering."""


class EvaluationWorker:
    """Evaluates the samples the driver hands it, ``concurrency`` at once, with a Scorer.

    One Scorer runs for the worker's life over a queue that :meth:`exchange` fills, so the
    worker's concurrency is used whatever the size of the batches; rows are handed back per
    sample, all of a sample's rows at once, so that a sample is either delivered whole or
    (when the worker dies) run again elsewhere whole.

    Args:
        payload: The function under test and the strategies (see ``_wire.dumps``).
        settings: The Scorer's options (concurrency, timeout, repeats, tracebacks,
            max_abandoned, tools, trace_limits).
        python_path: Folders put first on ``sys.path`` before the payload is read (where the
            function's module lives).
    """

    def __init__(
        self, payload: bytes, settings: Mapping[str, Any], python_path: Sequence[str]
    ) -> None:
        for folder in reversed(python_path):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        self._function, self._strategies = loads(payload)
        self._settings = dict(settings)
        self._per_sample = self._settings["repeats"] * max(1, len(self._strategies))
        self._queue: deque[IndexedSample] = deque()
        self._open: dict[int, list[EvaluationRow]] = {}
        self._finished: list[EvaluationRow] = []
        self._held = 0
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._fed: asyncio.Event | None = None
        self._done: asyncio.Event | None = None

    def ready(self) -> int:
        """The worker's process id, once its payload is read (the driver waits for it)."""
        return os.getpid()

    async def exchange(self, batch: bytes) -> bytes:
        """Queue the samples of ``batch``; return the rows of the samples finished since the
        last call, waiting until there is at least one."""
        if self._task is None:
            self._fed = asyncio.Event()
            self._done = asyncio.Event()
            # the actor owns this task for its life: Ray ends both when it kills the actor
            self._task = asyncio.get_running_loop().create_task(self._run())
        assert self._fed is not None and self._done is not None
        added = loads(batch)
        self._queue.extend(added)
        self._held += len(added)
        self._fed.set()
        # Return once half the samples held are done (or after a short linger once one is):
        # a round trip per sample would cost more than a cheap sample itself.
        await self._wait_for(1)
        with anyio.move_on_after(_LINGER):
            await self._wait_for(max(1, self._held // 2))
        if self._error is not None:
            raise self._error
        rows, self._finished = self._finished, []
        self._held -= len(rows) // self._per_sample
        return dumps(rows)

    async def _wait_for(self, samples: int) -> None:
        assert self._done is not None
        while self._error is None and len(self._finished) < samples * self._per_sample:
            self._done.clear()
            await self._done.wait()

    async def _samples(self) -> AsyncIterator[IndexedSample]:
        assert self._fed is not None
        while True:
            while self._queue:
                yield self._queue.popleft()
            self._fed.clear()
            await self._fed.wait()

    async def _run(self) -> None:
        assert self._done is not None
        settings = self._settings
        scorer = Scorer(
            settings["concurrency"],
            timeout=settings["timeout"],
            repeats=settings["repeats"],
            keep="none",
            tracebacks=settings["tracebacks"],
            max_abandoned=settings["max_abandoned"],
            tools=settings.get("tools", "live"),
            trace_limits=settings.get("trace_limits"),
            user_model=settings.get("user_model"),
            user_cache=settings.get("user_cache"),
            conversation_timeout=settings.get("conversation_timeout"),
        )
        try:
            async with scorer.stream(self._samples(), self._function, *self._strategies) as rows:
                async for row in rows:
                    group = self._open.setdefault(row.index, [])
                    group.append(row)
                    if len(group) == self._per_sample:
                        del self._open[row.index]
                        self._finished += group
                        self._done.set()
        except BaseException as exc:
            self._error = exc
            self._done.set()
            if not isinstance(exc, Exception):
                raise
