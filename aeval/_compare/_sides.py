"""The sides of a comparison: a report in hand, a run's file, or a stored run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from os import PathLike
from pathlib import Path
from typing import Protocol, TypeAlias, runtime_checkable

import anyio

from .._engine._sync import running_loop
from .._exceptions import AevalError, ComparisonError, FormatError, SampleLoadError
from .._reporting._codec import read_run
from .._reporting._report import EvaluationReport, partial_note
from .._samples._sources import RUN_FILE_SUFFIXES
from ._align import SideRows
from ._comparison import Comparison
from ._paired import compare_sides, side_rows

__all__ = [
    "LoadedSide",
    "RunSource",
    "Side",
    "compare",
    "compare_loaded",
    "compare_sync",
    "is_file",
    "load_side",
    "load_stored",
    "read_report_file",
]


@runtime_checkable
class RunSource(Protocol):
    """Where stored runs come from: anything with ``load(ref)``, such as ``aeval.RunStore``."""

    async def load(self, ref: str) -> EvaluationReport:
        """The stored run ``ref`` (a run id, ``latest``, ``latest~1``, ``NAME@latest``…)."""
        ...


Side: TypeAlias = "EvaluationReport | str | PathLike[str]"
"""A side of a comparison: a report with rows, a path to ``rows.jsonl`` or ``report.json``,
or (with a store) the ref of a stored run."""


@dataclass(frozen=True, slots=True)
class LoadedSide:
    """A side read and grouped, ready to compare.

    Attributes:
        rows: Its rows, grouped by (sample, strategy).
        partial: Its partial-run note (``None`` for a complete run).
    """

    rows: SideRows
    partial: str | None

    @classmethod
    def of(cls, report: EvaluationReport, *, role: str, label: str) -> LoadedSide:
        """A report in hand as a side (no I/O).

        Raises:
            ComparisonError: The report holds only some of its rows, or two samples share a
                name.
        """
        return cls(side_rows(report, role=role, label=label), partial_note(report))


async def compare(
    baseline: Side,
    candidate: Side,
    *,
    confidence: float = 0.95,
    store: RunSource | None = None,
) -> Comparison:
    """Compare a candidate run with a baseline run: aligned, paired, with a verdict.

    Each side is an :class:`~aeval.EvaluationReport` that holds its rows, a path to a run's
    ``rows.jsonl`` or ``report.json``, or, given a ``store``, a stored run's ref (a run id,
    ``latest``, ``latest~1``, ``NAME@latest``). Files and stores are read off the event loop.

    Example::

        comparison = await aeval.compare("main/rows.jsonl", "branch/rows.jsonl")
        print(comparison.verdict, comparison.difference, comparison.interval)
        assert_that(comparison).has_no_significant_regression(margin=2)

    Args:
        baseline: What is shipped today.
        candidate: The change under test.
        confidence: The confidence of the intervals and of "significant" (alpha = 1 - it).
        store: Where refs that are not files are loaded from (``aeval.RunStore(path)``).

    Raises:
        ComparisonError: A side cannot be read or holds only some rows, two samples share a
            name, or the sides share no (sample, strategy) pair; the message names the side.
    """
    first = await load_side(baseline, role="baseline", store=store)
    second = await load_side(candidate, role="candidate", store=store)
    return compare_loaded(first, second, confidence=confidence)


def compare_sync(
    baseline: Side,
    candidate: Side,
    *,
    confidence: float = 0.95,
    store: RunSource | None = None,
) -> Comparison:
    """Compare two runs from synchronous code (a script, a sync test) by running an event loop.

    The same as :func:`compare`, which it runs.

    Example::

        comparison = aeval.compare_sync("main/rows.jsonl", "branch/rows.jsonl")

    Args:
        baseline: As for :func:`compare`.
        candidate: As for :func:`compare`.
        confidence: As for :func:`compare`.
        store: As for :func:`compare`.

    Raises:
        RuntimeError: Called while an event loop is running in this thread; ``await``
            :func:`compare` there instead (blocking the loop would deadlock it).
        ComparisonError: As for :func:`compare`.
    """
    library = running_loop()
    if library is not None:
        raise RuntimeError(
            f"compare_sync() was called inside a running {library} event loop, where it would "
            "block the loop. Use `comparison = await aeval.compare(...)` instead."
        )
    return anyio.run(partial(compare, baseline, candidate, confidence=confidence, store=store))


def compare_loaded(
    baseline: LoadedSide, candidate: LoadedSide, *, confidence: float = 0.95
) -> Comparison:
    """Compare two sides already read (see :func:`compare`)."""
    return compare_sides(
        baseline.rows,
        candidate.rows,
        confidence=confidence,
        partial=(baseline.partial, candidate.partial),
    )


async def load_side(
    side: Side,
    *,
    role: str,
    store: RunSource | None = None,
    label: str | None = None,
) -> LoadedSide:
    """Read one side of a comparison (see :func:`compare`).

    Args:
        side: The report, the path or the stored run's ref.
        role: ``"baseline"`` or ``"candidate"``, for the messages.
        store: Where refs that are not files are loaded from.
        label: How to name the side (default: the path, the ref, or "baseline report").

    Raises:
        ComparisonError: The side cannot be read, or holds only some of its rows.
    """
    if isinstance(side, EvaluationReport):
        return LoadedSide.of(side, role=role, label=label or f"{role} report")
    if not isinstance(side, str | PathLike):
        raise TypeError(
            f"the {role} must be an EvaluationReport, a path to a rows.jsonl or report.json, "
            f"or a stored run's ref, got {type(side).__name__}"
        )
    text = os.fspath(side)
    if await is_file(text):
        report = await read_report_file(Path(text), role)
        name = label or text
    elif isinstance(side, str) and store is not None and not text.endswith(RUN_FILE_SUFFIXES):
        report = await load_stored(store, text, role)
        name = label or f"run {text}"
    else:
        raise ComparisonError(_missing(role, text, store), side=role)
    return LoadedSide.of(report, role=role, label=name)


async def is_file(text: str) -> bool:
    """Whether ``text`` names a file; ``False`` for text no path can be (too long, a NUL)."""
    try:
        return await anyio.Path(text).is_file()
    except (OSError, ValueError):
        return False


def _missing(role: str, text: str, store: RunSource | None) -> str:
    if text.endswith(RUN_FILE_SUFFIXES) or store is not None:
        return (
            f"the {role} file {text} does not exist: give the path of a run's rows.jsonl or "
            "report.json (aeval run writes both into its output directory)"
        )
    return (
        f"the {role} {text!r} is not a file: give the path of a run's rows.jsonl or "
        "report.json, or pass store=aeval.RunStore(path) to compare stored runs"
    )


async def read_report_file(path: Path, role: str) -> EvaluationReport:
    """The report of a run's ``rows.jsonl`` or ``report.json`` (``role`` names it in errors)."""
    try:
        if path.suffix.lower() == ".json":
            from ..formatters.json import report_from_json

            return report_from_json(await anyio.Path(path).read_bytes())
        rows, run = await read_run(path)
    except (FormatError, SampleLoadError) as exc:
        raise ComparisonError(f"the {role} {path}: {exc}", side=role) from exc
    except OSError as exc:
        raise ComparisonError(f"the {role} {path} cannot be read: {exc}", side=role) from exc
    if not rows:
        raise ComparisonError(
            f"the {role} {path} holds no rows: give the rows.jsonl of a run that evaluated "
            "at least one sample",
            side=role,
        )
    return EvaluationReport(rows, run=run)


async def load_stored(store: RunSource, ref: str, role: str) -> EvaluationReport:
    """The stored run ``ref`` of ``store`` (``role`` names it in errors)."""
    try:
        report = await store.load(ref)
    except (AevalError, LookupError, ValueError, OSError) as exc:
        raise ComparisonError(
            f"the {role} {ref!r} is not a file, and the run store cannot load it: {exc}",
            side=role,
        ) from exc
    if not isinstance(report, EvaluationReport):
        raise TypeError(f"the run store's load({ref!r}) returned {type(report).__name__}")
    return report
