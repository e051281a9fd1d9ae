"""The bounded queue between ``submit`` and the workers."""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["JobQueue"]

_T = TypeVar("_T")


class _Parked(Generic[_T]):
    """A worker waiting for a job: woken with the job handed to it, or with none (closed)."""

    __slots__ = ("event", "job")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.job: _T | None = None


class JobQueue(Generic[_T]):
    """At most ``size`` jobs waiting, and the workers parked until one comes.

    It behaves as anyio's memory object stream of ``size`` items did here (a job put while
    a worker is parked goes to that worker, outside the ``size`` waiting, so ``size=0``
    accepts a job only when a worker is free), at a deque's cost: ``put`` is what every
    submitted response pays. Used from the event loop's thread only.
    """

    __slots__ = ("_jobs", "_parked", "closed", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.closed = False
        self._jobs: deque[_T] = deque()
        self._parked: deque[_Parked[_T]] = deque()

    def __len__(self) -> int:
        """Jobs waiting (those handed to a parked worker not counted)."""
        return len(self._jobs)

    def put(self, job: _T) -> bool:
        """Queue ``job``, or hand it to a parked worker; ``False`` when the queue is full."""
        if self._parked:
            parked = self._parked.popleft()
            parked.job = job
            parked.event.set()
            return True
        if len(self._jobs) < self.size:
            self._jobs.append(job)
            return True
        return False

    def get_nowait(self) -> _T | None:
        """The next job waiting, or ``None``."""
        return self._jobs.popleft() if self._jobs else None

    async def get(self) -> _T | None:
        """The next job, after a turn of the event loop; waits for one when none is queued.
        ``None`` once the queue is closed and empty.

        A worker cancelled after a job was handed to it puts the job back at the front, so
        whoever drains the queue still finds (and counts) it.
        """
        await anyio.lowlevel.checkpoint()
        if self._jobs:
            return self._jobs.popleft()
        if self.closed:
            return None
        parked: _Parked[_T] = _Parked()
        self._parked.append(parked)
        try:
            await parked.event.wait()
        except BaseException:
            if parked.job is not None:
                self._jobs.appendleft(parked.job)
            elif parked in self._parked:
                self._parked.remove(parked)
            raise
        return parked.job

    def close(self) -> None:
        """Take no more jobs (``put`` refuses them); wake the parked workers with none."""
        self.closed = True
        self.size = 0
        while self._parked:
            self._parked.popleft().event.set()
