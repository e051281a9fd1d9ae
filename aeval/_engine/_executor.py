"""Running part of a dataset, or running it elsewhere: indexed samples and executors."""

from __future__ import annotations

from collections import deque
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass
from typing import Any

import anyio

from .._reporting._results import EvaluationRow
from .._samples import EvaluationSample
from ..abc import Executor
from ..trace import TraceLimits
from ..trace._bounds import DEFAULT_LIMITS
from ._tools import Tools

__all__ = [
    "Deliver",
    "Executor",
    "ExecutorJob",
    "FunctionUnderTest",
    "IndexedSample",
    "SampleFeed",
    "SampleSource",
    "check_sample",
    "unindexed",
]

FunctionUnderTest = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class IndexedSample:
    """A sample with its position in the whole dataset, for a run over part of it.

    A shard (``aeval run --shard``) or a cluster worker evaluates some samples of a larger
    dataset; given as ``IndexedSample`` items, they keep their dataset index in their rows, so
    rows from several runs merge in dataset order. Any other item takes its position in the
    source as its index.

    Attributes:
        index: The sample's position in the whole dataset.
        sample: The sample.
    """

    index: int
    sample: EvaluationSample


SampleSource = (
    Iterable[EvaluationSample]
    | AsyncIterable[EvaluationSample]
    | Iterable["EvaluationSample | IndexedSample"]
    | AsyncIterable["EvaluationSample | IndexedSample"]
)


def check_sample(sample: object, index: int) -> EvaluationSample:
    """``sample`` when it is an ``EvaluationSample``, else a ``TypeError`` naming item ``index``."""
    if not isinstance(sample, EvaluationSample):
        raise TypeError(
            f"Item {index} of the samples is {type(sample).__name__}, not an EvaluationSample"
        )
    return sample


def unindexed(item: object) -> object:
    """The sample of an :class:`IndexedSample`, else ``item`` itself."""
    return item.sample if type(item) is IndexedSample else item


class SampleFeed:
    """The samples of a run handed out in batches, each with its index (for an executor).

    Items are checked as they are read (an ``EvaluationSample``, parameters that fit the
    function), so a bad sample stops the run as it does in one process. Samples handed back
    with :meth:`give_back` (those of a worker that died) are handed out again first.
    """

    def __init__(
        self,
        samples: SampleSource,
        check: Callable[[EvaluationSample], None] | None,
    ) -> None:
        self._sync: Iterator[object] | None = None
        self._async: AsyncIterator[object] | None = None
        if isinstance(samples, AsyncIterable):
            self._async = aiter(samples)
        else:
            self._sync = iter(samples)
        self._check = check
        self._position = 0
        self._returned: deque[IndexedSample] = deque()
        self._lock = anyio.Lock()
        self.exhausted = False

    def _indexed(self, item: object) -> IndexedSample:
        position = self._position
        self._position += 1
        if type(item) is IndexedSample:
            indexed = item
        else:
            indexed = IndexedSample(position, check_sample(item, position))
        if self._check is not None:
            self._check(indexed.sample)
        return indexed

    async def take(self, count: int) -> list[IndexedSample]:
        """Up to ``count`` samples; an empty list once every sample was handed out."""
        batch: list[IndexedSample] = []
        async with self._lock:
            while self._returned and len(batch) < count:
                batch.append(self._returned.popleft())
            while len(batch) < count and not self.exhausted:
                try:
                    if self._sync is not None:
                        item = next(self._sync)
                    else:
                        assert self._async is not None
                        item = await anext(self._async)
                except (StopIteration, StopAsyncIteration):
                    self.exhausted = True
                    break
                batch.append(self._indexed(item))
        return batch

    def give_back(self, samples: Iterable[IndexedSample]) -> None:
        """Hand these samples out again, before any other."""
        self._returned.extend(samples)

    @property
    def pending(self) -> int:
        """Samples given back and not yet handed out again."""
        return len(self._returned)

    async def aclose(self) -> None:
        """Close an async source."""
        aclose = getattr(self._async, "aclose", None)
        if aclose is not None:
            await aclose()


@dataclass(frozen=True, slots=True)
class ExecutorJob:
    """What an executor runs: the Scorer's settings, the function and strategies, the samples.

    Attributes:
        feed: The samples, handed out in batches with their indexes.
        function: The function under test.
        strategies: The strategies, as given to the Scorer.
        prepared: What :meth:`Executor.prepare` returned for them.
        concurrency: Samples in flight at once on each worker.
        timeout: As for the Scorer.
        repeats: As for the Scorer.
        tracebacks: As for the Scorer.
        max_abandoned: As for the Scorer.
        warn: Adds a warning to the run's report (a worker that died, …).
        tools: As for the Scorer: where ``@aeval.tool`` functions get their results.
        trace_limits: As for the Scorer.
        user_model: As for the Scorer: plays the simulated users of conversation samples.
        user_cache: As for the Scorer.
        conversation_timeout: As for the Scorer.
    """

    feed: SampleFeed
    function: FunctionUnderTest
    strategies: tuple[object, ...]
    prepared: object
    concurrency: int
    timeout: float | None
    repeats: int
    tracebacks: bool
    max_abandoned: int
    warn: Callable[[str], None]
    tools: Tools = "live"
    trace_limits: TraceLimits = DEFAULT_LIMITS
    user_model: object | None = None
    user_cache: object | None = None
    conversation_timeout: float | None = None


Deliver = Callable[[Sequence[EvaluationRow]], Awaitable[None]]
"""Takes the rows of finished samples: every row of each sample (all its repeats) at once."""
