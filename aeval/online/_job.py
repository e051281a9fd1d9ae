"""One submitted response on its way through the evaluator, and a strategy applied to it."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._engine._apply import Judged, apply
from .._engine._callables import PreparedStrategy
from .._reporting._results import EvaluationRow
from .._samples import EvaluationSample, Parameters
from .._samples._labels import REVIEW_QUEUED
from .._samples._model import ParametersTypes
from ..trace import Trace

__all__ = ["Job", "apply_to_job", "timed_out"]


@dataclass(slots=True, eq=False)
class Job:
    """One submitted response on its way through the queue."""

    inputs: Any
    output: Any
    name: str | None
    prefix: str | None
    tags: Iterable[str]
    metadata: Mapping[str, Any] | None
    timestamp: float
    span: Any
    duration: float
    trace: Trace | None = None
    seq: int = field(default=0, init=False)
    selected: tuple[int, ...] = field(default=(), init=False)
    review: bool = field(default=False, init=False)

    def judged(self, sample: EvaluationSample) -> Judged:
        """The response's output to judge as ``sample``, and what its rows carry."""
        return Judged(sample, self.output, self.duration, self.seq, 0, self.timestamp, self.trace)

    def sample(self, prefix: str) -> EvaluationSample:
        """The sample its strategies receive, named ``{prefix}-{seq}`` when it has no name;
        a response queued for review says so in its metadata (``review_queued: true``).

        """
        metadata = self.metadata
        if self.review:
            metadata = {**(metadata or {}), REVIEW_QUEUED: True}
        return EvaluationSample(
            self.name or f"{self.prefix or prefix}-{self.seq}",
            _parameters(self.inputs),
            tags=self.tags,
            metadata=metadata,
        )


def _parameters(inputs: Any) -> ParametersTypes:
    """A response's inputs as parameters: a mapping is named, a list positional, else one
    (``EvaluationSample`` makes the ``Parameters``, once)."""
    if type(inputs) is dict or isinstance(inputs, Parameters | Mapping | list | tuple):
        return inputs
    return [inputs]


def timed_out(seconds: float) -> str:
    return f"the strategy did not finish within {seconds:g} s (online timeout)"


def apply_to_job(
    strategy: PreparedStrategy,
    sample: EvaluationSample,
    job: Job,
    *,
    seconds: float | None,
    tracebacks: bool,
) -> EvaluationRow | Awaitable[EvaluationRow]:
    """The row of one strategy on one response (:func:`~aeval._engine._apply.apply`): an
    error row if it raised or took longer than ``seconds`` (``None``: no limit). A sync
    strategy that runs on the event loop gives its row at once; any other, an awaitable."""
    return apply(
        strategy,
        job.judged(sample),
        seconds=seconds,
        timed_out=timed_out,
        tracebacks=tracebacks,
    )
