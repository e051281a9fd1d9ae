"""Reading a side named on a command line: a file when it exists, else a stored run's ref.

Stored runs come from the run store (``aeval._store.RunStore``, async ``load(ref)`` and
``resolve(ref)``) at ``--store PATH``, else ``$AEVAL_STORE``, else ``.aeval/runs.sqlite``.
A store that does not exist is never created here: looking a ref up in it is an error that
says where it looked.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from .._exceptions import AevalError, ComparisonError
from .._reporting._report import EvaluationReport
from .._samples._sources import RUN_FILE_SUFFIXES
from ._sides import LoadedSide, RunSource, is_file, load_side, load_stored, read_report_file

__all__ = ["DEFAULT_STORE", "STORE_ENV", "load_ref", "load_report", "store_path"]

DEFAULT_STORE = Path(".aeval", "runs.sqlite")
STORE_ENV = "AEVAL_STORE"


def store_path(explicit: str | os.PathLike[str] | None) -> Path:
    """``--store``, else ``$AEVAL_STORE``, else ``.aeval/runs.sqlite``."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get(STORE_ENV, "").strip()
    return Path(from_env) if from_env else DEFAULT_STORE


@asynccontextmanager
async def _opened_store(path: Path, role: str, ref: str, flag: str) -> AsyncIterator[RunSource]:
    if not await anyio.Path(path).is_file():
        raise ComparisonError(
            f"the {role} {ref!r} is not a file, and there is no run store at {path} to look it "
            f"up in: give the path of a run's rows.jsonl or report.json, or point {flag} "
            f"(or ${STORE_ENV}) at the store that aeval run records into",
            side=role,
        )
    try:
        from .._store import RunStore  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ComparisonError(
            f"the {role} {ref!r} is not a file, and this aeval has no run store to look "
            "stored runs up in: give the path of a run's rows.jsonl or report.json",
            side=role,
        ) from exc
    store: Any = RunStore(path)
    if hasattr(store, "__aenter__"):
        async with store as opened:
            yield opened
        return
    try:
        yield store
    finally:
        close = getattr(store, "aclose", None) or getattr(store, "close", None)
        if close is not None:
            result = close()
            if hasattr(result, "__await__"):
                await result


async def load_ref(ref: str, *, role: str, store: Path, flag: str = "--store") -> LoadedSide:
    """Read a side given on the command line: a file when it exists, else a stored run.

    Args:
        ref: The path or the stored run's ref.
        role: ``"baseline"`` or ``"candidate"``, for the messages.
        store: Where the run store is.
        flag: The option that names the store, for the messages.

    Raises:
        ComparisonError: Neither a file nor a stored run (or unreadable, or not whole).
    """
    if ref.lower().endswith(RUN_FILE_SUFFIXES) or await is_file(ref):
        return await load_side(ref, role=role)
    async with _opened_store(store, role, ref, flag) as source:
        label = f"run {ref}"
        resolve = getattr(source, "resolve", None)
        if resolve is not None:
            try:
                run_id = str(await resolve(ref))
            except (AevalError, LookupError, ValueError, OSError):
                run_id = ref
            label = f"run {run_id}" if run_id == ref else f"run {run_id} ({ref})"
        return await load_side(ref, role=role, store=source, label=label)


async def load_report(
    source: EvaluationReport | str | os.PathLike[str],
    *,
    role: str,
    store: RunSource | str | os.PathLike[str] | None = None,
) -> EvaluationReport:
    """A stored run's report: a report in hand, a ``rows.jsonl`` or ``report.json``, or a
    stored run's ref (``latest``, a run id, ``NAME@latest~1``) looked up in ``store``.

    Args:
        source: The report, the file or the ref.
        role: What the source is for, in the messages (``"replay source"``).
        store: A run store (anything with ``load(ref)``) or its path; the default store
            (``$AEVAL_STORE``, else ``.aeval/runs.sqlite``) when ``None``.

    Raises:
        ComparisonError: The file or the run cannot be read, naming it and what to change.
        TypeError: ``source`` is none of these.
    """
    if isinstance(source, EvaluationReport):
        return source
    if not isinstance(source, str | os.PathLike):
        raise TypeError(
            f"the {role} must be an EvaluationReport, a path to a rows.jsonl or report.json, "
            f"or a stored run's ref, got {type(source).__name__}"
        )
    text = os.fspath(source)
    if await is_file(text):
        return await read_report_file(Path(text), role)
    if text.lower().endswith(RUN_FILE_SUFFIXES):
        raise ComparisonError(
            f"the {role} file {text} does not exist: give the path of a run's rows.jsonl or "
            "report.json (aeval run writes both into its output directory)",
            side=role,
        )
    if isinstance(store, RunSource):
        return await load_stored(store, text, role)
    async with _opened_store(store_path(store), role, text, "store=") as opened:
        return await load_stored(opened, text, role)
