"""Progress of a run: a live bar on a terminal, plain periodic lines otherwise.

``aeval run`` and ``Scorer(progress=True)`` show it on stderr, so that standard output holds
the results alone (``aeval run > out.txt``). rich is imported only when progress is shown
(``import aeval`` never imports it).

Both count samples (function calls, samples × repeats, when the total is known) and show the
rows of the finished samples, their pass rate, errors, model retries (summed from the rows'
``retries`` metadata, as the report's ``usage`` does), the rate and the time left.
"""

from __future__ import annotations

import functools
import time
from typing import IO, TYPE_CHECKING, Any, Protocol

from .._reporting._results import EvaluationRow, Outcome

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "NullProgress",
    "PlainProgress",
    "RichProgress",
    "RunProgress",
    "Tally",
    "progress_for",
]

_STEPS = 10
_INTERVAL = 10.0


class Tally:
    """Counters updated in O(1) per row, counted per finished sample so that they agree.

    A sample (one call of the target, with its repeat) is finished once all its rows have
    arrived: one per strategy, also when the call failed. Its rows are counted then, so the
    line always reads samples × strategies rows.

    Args:
        strategies: Strategies per sample.
    """

    __slots__ = ("_open", "errors", "passed", "retries", "rows", "samples", "strategies")

    def __init__(self, strategies: int) -> None:
        self.strategies = max(1, strategies)
        self.samples = self.rows = self.passed = self.errors = self.retries = 0
        self._open: dict[tuple[int, int], list[int]] = {}

    def add(self, row: EvaluationRow) -> None:
        """Count one row; its sample's rows are added once the sample is finished."""
        if self.strategies == 1:
            self._add_sample(row)
            return
        key = (row.index, row.repeat)
        counts = self._open.get(key)
        if counts is None:
            counts = self._open[key] = [0, 0, 0, 0]
        counts[0] += 1
        if row.outcome is Outcome.PASSED:
            counts[1] += 1
        elif row.outcome is Outcome.ERROR:
            counts[2] += 1
        retries = row.metadata.get("retries") if row.metadata else None
        if isinstance(retries, int) and not isinstance(retries, bool):
            counts[3] += retries
        if counts[0] >= self.strategies:
            del self._open[key]
            self.samples += 1
            self.rows += counts[0]
            self.passed += counts[1]
            self.errors += counts[2]
            self.retries += counts[3]

    def _add_sample(self, row: EvaluationRow) -> None:
        # one strategy: each row finishes its sample, so no sample is left open
        self.samples += 1
        self.rows += 1
        outcome = row.outcome
        if outcome is Outcome.PASSED:
            self.passed += 1
        elif outcome is Outcome.ERROR:
            self.errors += 1
        metadata = row.metadata
        if metadata:
            retries = metadata.get("retries")
            if isinstance(retries, int) and not isinstance(retries, bool):
                self.retries += retries

    @property
    def pass_rate(self) -> float:
        """100 × passed rows / rows so far."""
        return 100.0 * self.passed / self.rows if self.rows else 0.0

    def stats(self) -> str:
        """``12 rows | pass 83.3% | 1 error | 0 retries``."""
        errors = "error" if self.errors == 1 else "errors"
        retries = "retry" if self.retries == 1 else "retries"
        return (
            f"{self.rows} rows | pass {self.pass_rate:.1f}% | {self.errors} {errors} | "
            f"{self.retries} {retries}"
        )


def _clock(seconds: float) -> str:
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class RunProgress(Protocol):
    """What the run tells the display."""

    tally: Tally

    def start(self, total: int) -> None:
        """The run starts; ``total`` samples (× repeats) will be evaluated."""

    def advance(self, row: EvaluationRow) -> None:
        """A row finished."""

    def stop(self, *, interrupted: bool) -> None:
        """The run ended, completely or not."""


class NullProgress:
    """Shows nothing (``--quiet``)."""

    def __init__(self, strategies: int) -> None:
        self.tally = Tally(strategies)

    def start(self, total: int) -> None:
        """Do nothing."""

    def advance(self, row: EvaluationRow) -> None:
        """Count the row."""
        self.tally.add(row)

    def stop(self, *, interrupted: bool) -> None:
        """Do nothing."""


class PlainProgress:
    """Writes a line each tenth of the run (or every 10 s), and a final line.

    Example of a line (one line)::

        aeval: 3/6 samples (50%) | 6 rows | pass 83.3% | 0 errors | 0 retries |
        41.2 samples/s | ETA 0:00:01
    """

    def __init__(self, stream: IO[str], strategies: int) -> None:
        self.tally = Tally(strategies)
        self._stream = stream
        self._total = 0
        self._started = 0.0
        self._last_line = 0.0
        self._last_step = 0

    def start(self, total: int) -> None:
        """Remember the total and the start time."""
        self._total = total
        self._started = self._last_line = time.monotonic()
        what = f"{total} samples" if total else "samples (how many is not known ahead)"
        self._write(f"aeval: evaluating {what}")

    def advance(self, row: EvaluationRow) -> None:
        """Count the row; write a line on each tenth or after 10 s."""
        before = self.tally.samples
        self.tally.add(row)
        if self.tally.samples == before:
            return
        now = time.monotonic()
        step = self.tally.samples * _STEPS // self._total if self._total else 0
        if step > self._last_step or now - self._last_line >= _INTERVAL:
            self._last_step = step
            self._last_line = now
            if not self._total or self.tally.samples < self._total:
                self._write(self._line(now))

    def _line(self, now: float) -> str:
        tally = self.tally
        elapsed = now - self._started
        rate = tally.samples / elapsed if elapsed > 0 else 0.0
        if not self._total:
            return f"aeval: {tally.samples} samples | {tally.stats()} | {rate:.1f} samples/s"
        percent = 100 * tally.samples // self._total
        eta = _clock((self._total - tally.samples) / rate) if rate else "?"
        return (
            f"aeval: {tally.samples}/{self._total} samples ({percent}%) | {tally.stats()} | "
            f"{rate:.1f} samples/s | ETA {eta}"
        )

    def stop(self, *, interrupted: bool) -> None:
        """Write the final line."""
        tally = self.tally
        what = "interrupted" if interrupted else "done"
        elapsed = time.monotonic() - self._started
        done = f"{tally.samples}/{self._total}" if self._total else str(tally.samples)
        self._write(f"aeval: {what}: {done} samples | {tally.stats()} | {_clock(elapsed)} elapsed")

    def _write(self, line: str) -> None:
        self._stream.write(line + "\n")
        self._stream.flush()


@functools.cache
def _rate_column() -> type[Any]:
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")

    return RateColumn


class RichProgress:
    """A live progress bar on a terminal."""

    def __init__(self, console: Console, strategies: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.tally = Tally(strategies)
        self._progress = Progress(
            TextColumn("[bold]aeval[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("samples"),
            TextColumn("{task.fields[stats]}", markup=False),
            _rate_column()(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            refresh_per_second=8,
        )
        self._task = self._progress.add_task("run", total=None, stats="", start=False)

    def start(self, total: int) -> None:
        """Show the bar."""
        self._progress.update(self._task, total=total or None, stats=self.tally.stats())
        self._progress.start_task(self._task)
        self._progress.start()

    def advance(self, row: EvaluationRow) -> None:
        """Count the row and move the bar when a sample is done."""
        before = self.tally.samples
        self.tally.add(row)
        self._progress.update(
            self._task, advance=self.tally.samples - before, stats=self.tally.stats()
        )

    def stop(self, *, interrupted: bool) -> None:
        """Leave the final bar on screen."""
        self._progress.update(self._task, stats=self.tally.stats())
        self._progress.stop()


def progress_for(strategies: int) -> RunProgress:
    """The progress a Scorer and ``aeval run`` show on stderr: a live bar on a terminal or in
    a notebook, else a line each tenth of the run."""
    import sys

    from rich.console import Console

    console = Console(stderr=True)
    if console.is_terminal or console.is_jupyter:
        return RichProgress(console, strategies)
    return PlainProgress(sys.stderr, strategies)
