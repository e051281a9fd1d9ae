"""Which sample sources are URLs, which stream, and the lazy stream of JSONL sources.

This is the one place that knows it: JSONL files (``.jsonl``, ``.ndjson``, any case) are read
a line at a time, so a run over them keeps memory flat; URLs and YAML or JSON files are read
whole by their loaders. Comparisons read a run from the same kinds of files
(:data:`RUN_FILE_SUFFIXES`).
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._model import EvaluationSample, Samples

_T = TypeVar("_T")

__all__ = [
    "JSONL_EXTENSIONS",
    "RUN_FILE_SUFFIXES",
    "BatchedStream",
    "CountedStream",
    "SizedStream",
    "batches_of",
    "count_lines",
    "is_url",
    "streams",
]

JSONL_EXTENSIONS = (".jsonl", ".ndjson")
"""The extensions of JSON Lines files, which are streamed."""

RUN_FILE_SUFFIXES = (".json", *JSONL_EXTENSIONS)
"""The files a run can be read back from: report.json and rows.jsonl."""


def is_url(source: str) -> bool:
    """Whether ``source`` is an http or https URL (the scheme in any case)."""
    return source[:8].lower().startswith(("http://", "https://"))


def streams(sources: str | Iterable[str]) -> bool:
    """Whether every source is a JSONL file (not a URL), so that a run can stream them."""
    if isinstance(sources, str):
        sources = (sources,)
    return all(
        not is_url(source) and source.lower().endswith(JSONL_EXTENSIONS) for source in sources
    )


def batches_of(samples: AsyncIterable[_T]) -> AsyncGenerator[Sequence[_T], None]:
    """The items of ``samples`` in consecutive lists: a chunk's worth at a time from a source
    that reads that way (its ``sample_batches()``, as JSONL streams have), else one by one, so
    that nothing is read ahead of what is asked for. Closing the result closes ``samples``.
    """
    batches = getattr(samples, "sample_batches", None)
    if callable(batches):
        return _closing(batches(), samples)
    return _one_by_one(samples)


async def _closing(batches: AsyncIterator[Any], source: object) -> AsyncGenerator[Any, None]:
    try:
        async for batch in batches:
            yield batch
    finally:
        await _aclose(batches)
        await _aclose(source)


async def _one_by_one(samples: AsyncIterable[_T]) -> AsyncGenerator[Sequence[_T], None]:
    iterator = aiter(samples)
    try:
        async for item in iterator:
            yield (item,)
    finally:
        await _aclose(iterator)


async def _aclose(iterator: object) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


def count_lines(paths: Iterable[str]) -> int:
    """The non-blank lines of ``paths``: the samples of JSONL files."""
    total = 0
    for path in paths:
        with open(path, "rb") as handle:
            total += sum(1 for line in handle if line.strip())
    return total


class BatchedStream(Generic[_T]):
    """A stream read a batch at a time (:meth:`sample_batches`) and iterated an item at a
    time; an iteration stopped early closes the batches, and with them the file."""

    def sample_batches(self) -> AsyncGenerator[Sequence[_T], None]:
        """The items, a batch at a time."""
        raise NotImplementedError

    async def __aiter__(self) -> AsyncIterator[_T]:
        batches = self.sample_batches()
        try:
            async for batch in batches:
                for item in batch:
                    yield item
        finally:
            await batches.aclose()  # closes the file when the reader stops early


class SizedStream(BatchedStream[_T]):
    """A batched stream that knows how many items it holds, as ``len()`` (for progress and
    the report's expected count)."""

    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True, slots=True, eq=False)
class CountedStream(SizedStream[EvaluationSample]):
    """JSONL sources read lazily, that know how many samples they hold (for progress and
    reports) and check each sample as it is read.

    Args:
        sources: The JSONL files, in order.
        count: How many samples they hold (:func:`count_lines`).
        check: Called with each sample as it is read; it raises to refuse one.
    """

    sources: Sequence[str]
    count: int
    check: Callable[[EvaluationSample], None] | None = None

    async def sample_batches(self) -> AsyncGenerator[Sequence[EvaluationSample], None]:
        """The samples a chunk of a file at a time; a sample ``check`` refuses comes after
        the samples before it (its error is raised on the next read)."""
        check = self.check
        for source in self.sources:
            batches = batches_of(Samples.stream(source))
            try:
                async for batch in batches:
                    if check is not None:
                        for position, sample in enumerate(batch):
                            try:
                                check(sample)
                            except Exception:
                                if position:
                                    yield batch[:position]
                                raise
                    yield batch
            finally:
                await _aclose(batches)
