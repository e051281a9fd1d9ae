"""One submitted response on its way through the evaluator, and a strategy applied to it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from time import perf_counter
from typing import Any

import anyio

from .._engine._callables import PreparedStrategy, apply_strategy
from .._engine._run import retries_of
from .._reporting._results import ErrorInfo, EvaluationRow
from .._samples import EvaluationSample, Parameters

__all__ = ["Job", "StrategyTimeout", "apply_to_job"]


class Job:
    """One submitted response on its way through the queue."""

    __slots__ = (
        "duration",
        "inputs",
        "metadata",
        "name",
        "output",
        "prefix",
        "selected",
        "seq",
        "span",
        "tags",
        "timestamp",
    )

    def __init__(
        self,
        inputs: Any,
        output: Any,
        name: str | None,
        prefix: str | None,
        tags: Iterable[str],
        metadata: Mapping[str, Any] | None,
        timestamp: float,
        span: Any,
        duration: float,
    ) -> None:
        self.inputs = inputs
        self.output = output
        self.name = name
        self.prefix = prefix
        self.tags = tags
        self.metadata = metadata
        self.timestamp = timestamp
        self.span = span
        self.duration = duration
        self.seq = 0
        self.selected: tuple[int, ...] = ()

    def sample(self, prefix: str) -> EvaluationSample:
        """The sample its strategies receive, named ``{prefix}-{seq}`` when it has no name."""
        return EvaluationSample(
            self.name or f"{self.prefix or prefix}-{self.seq}",
            _parameters(self.inputs),
            tags=self.tags,
            metadata=self.metadata,
        )


def _parameters(inputs: Any) -> Parameters:
    """A response's inputs as parameters: a mapping is named, a list positional, else one."""
    if isinstance(inputs, Parameters | Mapping | list | tuple):
        return Parameters(inputs)
    return Parameters([inputs])


class StrategyTimeout(Exception):
    """A strategy did not finish within the evaluator's ``timeout``."""


async def apply_to_job(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    job: Job,
    *,
    seconds: float | None,
    tracebacks: bool,
) -> EvaluationRow:
    """The row of one strategy on one response: an error row if it raised or took longer
    than ``seconds`` (``None``: no limit)."""
    started = perf_counter()
    try:
        if seconds is None:
            result = await apply_strategy(
                strategy.evaluate, strategy.name, sample, job.output, inline=strategy.inline
            )
        else:
            with anyio.move_on_after(seconds):
                result = await apply_strategy(
                    strategy.evaluate, strategy.name, sample, job.output, inline=strategy.inline
                )
                return _row_of(strategy, sample, job, result, started)
            raise StrategyTimeout(
                f"the strategy did not finish within {seconds:g} s (online timeout)"
            )
    except Exception as exc:
        if isinstance(exc, StrategyTimeout):
            error = ErrorInfo("TimeoutError", str(exc))
        else:
            error = ErrorInfo.from_exception(exc, with_traceback=tracebacks)
        return EvaluationRow.from_error(
            sample,
            strategy.name,
            job.output,
            error,
            duration=job.duration,
            strategy_duration=perf_counter() - started,
            index=job.seq,
            position=strategy.position,
            metadata=retries_of(exc),
            timestamp=job.timestamp,
        )
    return _row_of(strategy, sample, job, result, started)


def _row_of(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    job: Job,
    result: Any,
    started: float,
) -> EvaluationRow:
    return EvaluationRow.from_result(
        sample,
        strategy.name,
        job.output,
        result,
        duration=job.duration,
        strategy_duration=perf_counter() - started,
        index=job.seq,
        position=strategy.position,
        timestamp=job.timestamp,
    )
