"""Whether a strategy runs on the event loop or in a worker thread, seen from outside: the
thread its ``evaluate`` runs in during a Scorer run."""

from __future__ import annotations

import copy
import inspect
import threading
from typing import Any

from aeval import EvaluationResult, EvaluationSample, evaluate_sync


def runs_on_the_loop(strategy: Any) -> bool:
    """Whether a Scorer calls ``strategy`` (a copy of it) on the event loop's thread."""
    seen: dict[str, int] = {}
    evaluate = type(strategy).evaluate
    probe_type: type[Any]
    if inspect.iscoroutinefunction(evaluate):

        class AsyncProbe(type(strategy)):  # type: ignore[misc]
            __slots__ = ()

            async def evaluate(self, sample: EvaluationSample, out: Any) -> EvaluationResult:
                seen["strategy"] = threading.get_ident()
                return EvaluationResult.passing()

        probe_type = AsyncProbe
    else:

        class Probe(type(strategy)):  # type: ignore[misc]
            __slots__ = ()

            def evaluate(self, sample: EvaluationSample, out: Any) -> EvaluationResult:
                seen["strategy"] = threading.get_ident()
                return EvaluationResult.passing()

        probe_type = Probe
    probe = copy.copy(strategy)
    probe.__class__ = probe_type

    async def target(*_: Any) -> Any:
        seen["loop"] = threading.get_ident()
        return "out"

    evaluate_sync([EvaluationSample("s", ["q"])], target, probe)
    return seen["strategy"] == seen["loop"]
