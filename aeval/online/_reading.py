"""Reading an online evaluator while it runs: its accounts and its window's scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

import anyio

from ._statistics import Accounts, OnlineStatistics
from ._window import Since, Window, WindowScore

__all__ = ["EvaluatorState", "OnlineReading"]

EvaluatorState = Literal["new", "running", "closing", "closed"]


class OnlineReading:
    """The reading half of :class:`OnlineEvaluator`: its statistics and window scores."""

    queue_size: int
    concurrency: int
    _state: EvaluatorState
    _accounts: Accounts
    _window: Window
    _clock: Callable[[], float]
    _idle: anyio.Event

    def statistics(self) -> OnlineStatistics:
        """A snapshot of the accounts (see :class:`OnlineStatistics`); never waits."""
        queue = getattr(self, "_queue", None)
        depth = 0
        if queue is not None and self._state != "closed":
            depth = len(queue)
        return self._accounts.snapshot(
            queue_depth=depth, queue_size=self.queue_size, concurrency=self.concurrency
        )

    async def join(self) -> None:
        """Wait until every response queued so far has been evaluated or dropped.

        Responses submitted from other threads count once the loop has received them.
        """
        while self._state != "new" and not self._idle.is_set():
            await self._idle.wait()

    async def average_score(
        self,
        *,
        since: Since | None = None,
        tag: str | None = None,
        strategy: str | None = None,
    ) -> float | None:
        """The score (100 × passed rows / rows) of the responses since ``since``.

        ``None`` when the window holds no row there (no data, which is not a score of 0).

        Args:
            since: Unix time, a ``datetime`` (naive means UTC) or a ``timedelta`` ago
                (``timedelta(hours=1)``); ``None`` counts every row the window keeps.
            tag: Only the rows of responses with this tag.
            strategy: Only the rows of this strategy.
        """
        return (await self.window(since=since, tag=tag, strategy=strategy)).score

    async def window(
        self,
        *,
        since: Since | None = None,
        until: Since | None = None,
        tag: str | None = None,
        strategy: str | None = None,
    ) -> WindowScore:
        """The counts and scores of the rows of responses from ``since`` to ``until`` (now)."""
        start, end = self._window.span(since, until, self._clock())
        return self._window.score(start, end, tag=tag, strategy=strategy)

    async def by_strategy(
        self, *, since: Since | None = None, tag: str | None = None
    ) -> Mapping[str, WindowScore]:
        """One :class:`WindowScore` per strategy since ``since`` (of one tag if given)."""
        start, end = self._window.span(since, None, self._clock())
        return self._window.by(start, end, field="strategy", tag=tag)

    async def by_tag(self, *, since: Since | None = None) -> Mapping[str, WindowScore]:
        """One :class:`WindowScore` per tag since ``since``, every strategy's rows together."""
        start, end = self._window.span(since, None, self._clock())
        return self._window.by(start, end, field="tag")
