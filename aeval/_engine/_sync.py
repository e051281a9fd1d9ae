"""The synchronous edge: run an evaluation from code that has no event loop."""

from __future__ import annotations

import sys
from typing import Any

import anyio

from .._reporting._report import EvaluationReport
from ._scorer import FunctionUnderTest, SampleSource, Scorer

__all__ = ["evaluate_sync", "running_loop"]


def evaluate_sync(
    samples: SampleSource,
    function: FunctionUnderTest,
    *strategies: object,
    concurrency: int = 1,
    **scorer_options: Any,
) -> EvaluationReport:
    """Evaluate from synchronous code (a script, a sync test) by running an event loop.

    Args:
        samples: As for :meth:`Scorer.evaluate`.
        function: As for :meth:`Scorer.evaluate`.
        *strategies: As for :meth:`Scorer.evaluate`.
        concurrency: The most samples in flight at once (1 by default, as for the Scorer;
            the ``aeval`` command's default is 4).
        **scorer_options: Other :class:`Scorer` options (``timeout``, ``repeats``, ``keep``,
            ``progress``, …).

    Raises:
        RuntimeError: Called while an event loop is running in this thread; ``await`` a
            Scorer there instead (blocking the loop would deadlock it).
    """
    library = running_loop()
    if library is not None:
        raise RuntimeError(
            f"evaluate_sync() was called inside a running {library} event loop, where it would "
            "block the loop. Use `async with Scorer(...) as scorer: "
            "report = await scorer.evaluate(...)` instead."
        )
    scorer = Scorer(concurrency, **scorer_options)

    async def main() -> EvaluationReport:
        async with scorer:
            return await scorer.evaluate(samples, function, *strategies)

    return anyio.run(main)


def running_loop() -> str | None:
    """The async library whose event loop runs in this thread (``asyncio``/``trio``), if any."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return "asyncio"
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            return None
        return "trio"
    return None
