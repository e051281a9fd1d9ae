"""What an online evaluator has done with the responses it was given."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["Accounts", "OnlineStatistics"]


@dataclass(frozen=True, slots=True)
class OnlineStatistics:
    """A snapshot of an :class:`~aeval.online.OnlineEvaluator`'s accounts.

    Responses are counted once each: every submitted response is exactly one of
    *sampled out*, *dropped*, *evaluated* or still *pending* (queued or in flight), so once
    the evaluator is idle (or closed)::

        submitted == evaluated + sampled_out + dropped

    Rows and strategies are counted apart: a response evaluated by two of its three
    strategies yields two rows, and one strategy sampled out.

    Attributes:
        submitted: Responses given to ``submit`` (or through ``watch``).
        sampled_out: Responses for which no strategy was drawn: nothing to evaluate.
        dropped: Responses drawn for evaluation that were not evaluated: the sum of
            ``queue_full``, ``unfinished``, ``not_running``, ``invalid`` and ``crashed``.
        evaluated: Responses whose drawn strategies all ran; their rows were delivered.
        errors: Rows whose strategy raised or timed out (an evaluated response can hold
            several).
        queue_depth: Responses waiting in the queue now.
        in_flight: Responses being evaluated now.
        rows: Rows delivered (to the window, the sinks and OpenTelemetry).
        strategies_sampled_out: (response, strategy) pairs not run because of their sample
            rate, sampled-out responses included.
        queue_full: Responses dropped because the queue was full.
        unfinished: Responses dropped at shutdown: still queued or in flight at the drain
            deadline.
        not_running: Responses submitted before the evaluator started or after it closed.
        invalid: Responses that could not be evaluated at all: a rate function that raised,
            a name, tags or metadata a sample cannot take.
        queue_size: The most responses that may wait in the queue.
        concurrency: The most responses evaluated at once.
        crashed: Responses whose evaluation stopped on an error outside the strategies (a
            strategy's error is an error row): a ``BaseException`` from a sink, a bug. Each
            is logged with its traceback on the ``aeval.online`` logger, and the worker goes
            on with the next response.
    """

    submitted: int
    sampled_out: int
    dropped: int
    evaluated: int
    errors: int
    queue_depth: int
    in_flight: int
    rows: int
    strategies_sampled_out: int
    queue_full: int
    unfinished: int
    not_running: int
    invalid: int
    queue_size: int
    concurrency: int
    crashed: int = 0

    @property
    def pending(self) -> int:
        """Responses accepted and not yet settled: queued or in flight."""
        return self.queue_depth + self.in_flight


class Accounts:
    """An evaluator's running counts, read as :class:`OnlineStatistics`.

    Changed on the event loop's thread only, except ``refused``: responses submitted and
    refused off the loop (counted as ``not_running``), guarded by a lock.
    """

    __slots__ = (
        "crashed",
        "errors",
        "evaluated",
        "in_flight",
        "invalid",
        "lock",
        "not_running",
        "queue_full",
        "refused",
        "rows",
        "sampled_out",
        "strategies_out",
        "submitted",
        "unfinished",
    )

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.submitted = self.sampled_out = self.evaluated = self.errors = 0
        self.rows = self.strategies_out = self.queue_full = self.unfinished = 0
        self.not_running = self.invalid = self.in_flight = 0
        self.refused = self.crashed = 0

    def refuse(self) -> None:
        """Count one response submitted and refused off the loop (from any thread)."""
        with self.lock:
            self.refused += 1

    def dropped(self) -> int:
        """Responses dropped, those refused off the loop aside."""
        return self.queue_full + self.unfinished + self.not_running + self.invalid + self.crashed

    def dropped_summary(self) -> str:
        """The responses dropped, by reason, in a sentence for the run's warnings."""
        with self.lock:
            refused = self.refused
        return (
            f"online evaluation dropped {self.dropped() + refused} response(s): "
            f"{self.queue_full} with the queue full, {self.unfinished} unfinished at "
            f"shutdown, {self.not_running + refused} submitted while not running, "
            f"{self.invalid} invalid, {self.crashed} crashed"
        )

    def snapshot(self, *, queue_depth: int, queue_size: int, concurrency: int) -> OnlineStatistics:
        """The counts now, with the queue's depth and the evaluator's limits."""
        with self.lock:
            refused = self.refused
        return OnlineStatistics(
            submitted=self.submitted + refused,
            sampled_out=self.sampled_out,
            dropped=self.dropped() + refused,
            evaluated=self.evaluated,
            errors=self.errors,
            queue_depth=queue_depth,
            in_flight=self.in_flight,
            rows=self.rows,
            strategies_sampled_out=self.strategies_out,
            queue_full=self.queue_full,
            unfinished=self.unfinished,
            not_running=self.not_running + refused,
            invalid=self.invalid,
            queue_size=queue_size,
            concurrency=concurrency,
            crashed=self.crashed,
        )
