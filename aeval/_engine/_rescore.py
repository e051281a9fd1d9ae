"""Rescoring: new strategies applied to a stored run's outputs and traces, calling nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._reporting._report import EvaluationReport, partial_note
from .._reporting._results import ErrorInfo
from .._samples import EvaluationSample, Parameters
from ..trace import Trace
from ._apply import Judged
from ._callables import bind_function, prepare_strategies
from ._run import Run, RunSettings, Tally

if TYPE_CHECKING:
    from ._scorer import Scorer

__all__ = ["StoredCall", "rescore_report", "stored_calls"]


@dataclass(frozen=True, slots=True)
class StoredCall:
    """What one (sample, repeat) of a stored run produced: the output, or the failure."""

    sample: EvaluationSample
    index: int
    repeat: int
    output: Any
    duration: float
    trace: Trace | None
    timestamp: float | None
    error: ErrorInfo | None


def stored_calls(report: EvaluationReport) -> list[StoredCall]:
    """The calls of the function under test that ``report``'s rows hold, in row order.

    Raises:
        ValueError: The report holds no rows (it was kept with ``keep="failures"`` or
            ``"none"``, or is empty).
    """
    if not report.holds_all_rows:
        raise ValueError(
            "the run to rescore holds only some of its rows (it was kept with keep='failures' "
            "or 'none'): rescore a run that kept all its rows"
        )
    calls: dict[tuple[int, int], StoredCall] = {}
    for row in report.evaluations:
        key = (row.index, row.repeat)
        known = calls.get(key)
        failed = row.function_failed
        if known is None or (failed and known.error is None):
            calls[key] = StoredCall(
                row.sample,
                row.index,
                row.repeat,
                row.output,
                row.duration,
                row.trace,
                row.timestamp,
                row.error if failed else None,
            )
    if not calls:
        raise ValueError(
            "the run to rescore holds no rows: rescore a run kept with all its rows "
            "(keep='all', the default; rows.jsonl, report.json or the run store)"
        )
    return list(calls.values())


def _never_called(params: Parameters) -> Any:
    raise AssertionError("rescoring never calls the function under test")  # pragma: no cover


class RescoreRun(Run):
    """A run whose samples are answered by a stored run's outputs and traces."""

    def __init__(
        self,
        settings: RunSettings,
        calls: Sequence[StoredCall],
        strategies: tuple[Any, ...],
        tally: Tally,
        *,
        source_partial: str | None = None,
    ) -> None:
        samples: dict[int, EvaluationSample] = {}
        for call in calls:
            samples.setdefault(call.index, call.sample)
        super().__init__(
            settings, list(samples.values()), bind_function(_never_called), False, strategies, tally
        )
        self._calls = {(call.index, call.repeat): call for call in calls}
        self._source_partial = source_partial

    def _shortfall(self) -> str | None:
        if self._source_partial is not None:
            return (
                f"the rescored run is partial ({self._source_partial}): so is this one, "
                "which holds only the rows it kept"
            )
        return super()._shortfall()

    def _work(self, samples: Iterator[object]) -> Iterator[tuple[int, int, Any]]:
        for (index, repeat), call in self._calls.items():
            yield index, repeat, call.sample

    async def _produce(self, sample: EvaluationSample, index: int, repeat: int) -> Judged | None:
        """The stored call's output, or its error rows (the stored error, one per strategy)."""
        call = self._calls[(index, repeat)]
        judged = Judged(
            sample,
            call.output if call.error is None else None,
            duration=call.duration,
            index=index,
            repeat=repeat,
            timestamp=call.timestamp,
            trace=call.trace,
        )
        if call.error is None:
            return judged
        self.aggregator.count_sample(repeat=repeat, failed=True)
        self.tally.samples_done += 1
        for strategy in self.strategies:
            await self._add(judged.error_row(strategy, call.error))
        return None


async def rescore_report(
    scorer: Scorer,
    source: EvaluationReport | str | os.PathLike[str],
    strategies: Sequence[object],
    *,
    tally: Tally,
    store: Any = None,
) -> EvaluationReport:
    """See :meth:`aeval.Scorer.rescore`."""
    from .._compare._refs import load_report

    prepared = prepare_strategies(strategies)
    if not prepared:
        raise TypeError("rescore needs at least one strategy to apply to the stored outputs")
    report = await load_report(source, role="run to rescore", store=store)
    calls = stored_calls(report)
    settings = RunSettings(
        concurrency=scorer.concurrency,
        timeout=scorer.timeout,
        repeats=max(call.repeat for call in calls) + 1,
        keep=scorer.keep,
        tracebacks=scorer.tracebacks,
        max_abandoned=scorer.max_abandoned,
        sinks=scorer.sinks,
        redactor=scorer.redactor,
        executor=None,
        tools="live",
        trace_limits=scorer.trace_limits,
    )
    run = RescoreRun(settings, calls, prepared, tally, source_partial=partial_note(report))
    await run.execute(None)
    return run.aggregator.report()
