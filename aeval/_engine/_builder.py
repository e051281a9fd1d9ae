"""The fluent API: ``Evaluation.builder()...build().run()``."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from .._exceptions import EvaluationSetupError
from .._reporting._report import EvaluationReport
from .._samples import Samples
from ._scorer import FunctionUnderTest, Scorer

__all__ = ["Evaluation", "EvaluationBuilder", "EvaluationRunner"]

logger = logging.getLogger("aeval")


class Evaluation:
    """Entry point of the fluent API, deprecated: :class:`~aeval.Scorer` is the one front door.

    Example:
        >>> runner = (
        ...     Evaluation.builder()
        ...     .with_samples("tests/samples.yaml")
        ...     .with_concurrency(5)
        ...     .evaluate(bot.chat)
        ...     .using(ExactMatchStrategy())
        ...     .build()
        ... )  # doctest: +SKIP
        >>> report = await runner.run()  # doctest: +SKIP
    """

    @staticmethod
    def builder() -> EvaluationBuilder:
        """A new, empty builder."""
        return EvaluationBuilder()


class EvaluationBuilder:
    """Collects samples, tags, concurrency, the function and strategies, then builds a runner.

    Every method returns the builder, so calls chain.
    """

    def __init__(self) -> None:
        self._source: tuple[str | PathLike[str], ...] | Samples | None = None
        self._tags: tuple[str, ...] = ()
        self._concurrency = 1
        self._function: FunctionUnderTest | None = None
        self._strategies: list[object] = []
        self._scorer_options: dict[str, Any] = {}

    def with_samples(self, *sources: str | PathLike[str] | Samples) -> EvaluationBuilder:
        """Samples to evaluate: a ``Samples`` or paths loaded when the runner runs."""
        if not sources:
            raise ValueError("with_samples() needs a Samples object or at least one path")
        if len(sources) == 1 and isinstance(sources[0], Samples):
            self._source = sources[0]
            return self
        paths: list[str | PathLike[str]] = []
        for source in sources:
            if isinstance(source, Samples):
                raise TypeError("Pass either one Samples object or paths to with_samples()")
            if not isinstance(source, str | PathLike) or not str(source).strip():
                raise ValueError(f"Source must be a non-blank path, got {source!r}")
            paths.append(source)
        self._source = tuple(paths)
        return self

    def with_tags(self, *tags: str) -> EvaluationBuilder:
        """Keep only samples carrying one of these tags (replaces earlier tags)."""
        for tag in tags:
            if not isinstance(tag, str):
                raise TypeError(f"Tags must be strings, got {tag!r}")
        self._tags = tags
        return self

    def with_concurrency(self, concurrency: int) -> EvaluationBuilder:
        """The most samples in flight at once (>= 1)."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"Concurrency must be at least 1, got {concurrency!r}")
        self._concurrency = concurrency
        return self

    def with_scorer_options(self, **options: Any) -> EvaluationBuilder:
        """Other :class:`Scorer` options: ``timeout``, ``repeats``, ``keep``, ``sinks``…"""
        Scorer(1, **options)
        self._scorer_options.update(options)
        return self

    def evaluate(self, function: FunctionUnderTest) -> EvaluationBuilder:
        """The function under test (sync or async, receives ``Parameters``)."""
        if not callable(function):
            raise TypeError(f"Function must be callable, got {type(function).__name__}")
        self._function = function
        return self

    def using(self, strategy: object) -> EvaluationBuilder:
        """Add a strategy; every strategy is applied to every sample, in order."""
        if strategy is None:
            raise ValueError("Strategy must not be None")
        self._strategies.append(strategy)
        return self

    def build(self) -> EvaluationRunner:
        """Check the configuration and return a runner that can run many times.

        Raises:
            EvaluationSetupError: Samples, the function or every strategy is missing.
        """
        if self._source is None:
            raise EvaluationSetupError("Samples must be set using with_samples()")
        if self._function is None:
            raise EvaluationSetupError("Function must be set using evaluate()")
        if not self._strategies:
            raise EvaluationSetupError("At least one strategy must be set using using()")
        return EvaluationRunner(
            self._source,
            self._function,
            tuple(self._strategies),
            tags=self._tags,
            concurrency=self._concurrency,
            scorer_options=dict(self._scorer_options),
        )

    async def run(self) -> EvaluationReport:
        """``build()`` then run once."""
        return await self.build().run()

    async def run_and_save(
        self, directory: str | PathLike[str], **options: Any
    ) -> EvaluationReport:
        """``build()`` then run once and save the Markdown report (see the runner)."""
        return await self.build().run_and_save(directory, **options)


@dataclass(frozen=True, slots=True, eq=False)
class EvaluationRunner:
    """A configured evaluation; each :meth:`run` loads the samples and uses a fresh Scorer.

    Attributes:
        source: The sample files, or the samples themselves.
        function: The function under test.
        strategies: The strategies each sample is scored with.
        tags: Only the samples with one of these tags run (none: all).
        concurrency: Samples run at once.
        scorer_options: The other keyword arguments of the :class:`Scorer`.
    """

    source: Sequence[str | PathLike[str]] | Samples
    function: FunctionUnderTest
    strategies: tuple[object, ...]
    _: KW_ONLY
    tags: tuple[str, ...]
    concurrency: int
    scorer_options: dict[str, Any]

    async def _samples(self) -> Samples:
        if isinstance(self.source, Samples):
            samples = self.source
        else:
            samples = await Samples.load(*self.source)
        return samples.filter_by_tags(*self.tags)

    async def run(self) -> EvaluationReport:
        """Load the samples, filter by tags and evaluate. No matching sample: an empty report."""
        samples = await self._samples()
        if not samples:
            logger.warning("No samples to evaluate (tags: %s): empty report", list(self.tags))
            return EvaluationReport()
        async with Scorer(self.concurrency, **self.scorer_options) as scorer:
            report = await scorer.evaluate(samples, self.function, *self.strategies)
        logger.info("Evaluation completed: score = %.2f%%", report.score)
        return report

    async def run_and_save(
        self, directory: str | PathLike[str], *, include_details: bool = True
    ) -> EvaluationReport:
        """Run, then write ``evaluation_report_<YYYYmmdd_HHMMSS>.md`` into ``directory``."""
        report = await self.run()
        stamp = time.strftime("%Y%m%d_%H%M%S")
        path = Path(directory) / f"evaluation_report_{stamp}.md"
        await report.save_as(path, "markdown", include_details=include_details)
        return report
