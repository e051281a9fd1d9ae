"""What the run store says when a reference matches no run: what it holds instead."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .._exceptions import RunNotFoundError
from ._refs import Ref

__all__ = ["SHOWN", "names_there", "require_group", "require_name", "why_no_id", "why_not_latest"]

SHOWN = 8
"""Most runs or names a message lists."""


def _counted(connection: sqlite3.Connection, name: str | None) -> tuple[int, int]:
    """The runs (of ``name``, or all), and how many of them are the runs of single shards."""
    where, values = ("WHERE name = ?", [name]) if name is not None else ("", [])
    total, sharded = connection.execute(
        f"SELECT count(*), count(shard) FROM runs {where}", values
    ).fetchone()
    return total, sharded


def why_not_latest(connection: sqlite3.Connection, path: Path, ref: Ref, shards: bool) -> str:
    """Why ``latest~N`` (of a name, perhaps) matches no run."""
    assert ref.back is not None
    total, sharded = _counted(connection, ref.name)
    counted = total if shards else total - sharded
    hidden = (
        ""
        if shards or not sharded
        else f" (and {sharded} run(s) of single shards, which latest does not count: give "
        "the merged run, `aeval merge` records it, or a shard run's id)"
    )
    if ref.name is None and not total:
        return f"{path} holds no run yet"
    if total and not counted:
        of = "" if ref.name is None else f" of {ref.name!r}"
        return (
            f"{path} holds only {sharded} run(s){of} of single shards (aeval run "
            "--shard), which latest does not count: merge them with `aeval merge`, which "
            "records the merged run, or give a shard run's id"
        )
    if ref.name is None:
        return (
            f"it asks for the run {ref.back} before the latest, and {path} holds "
            f"{counted} run(s){hidden}"
        )
    if total:
        return (
            f"it asks for the run of {ref.name!r} {ref.back} before its latest, and "
            f"{path} holds {counted} run(s) of {ref.name!r}{hidden}"
        )
    return f"{path} holds no run named {ref.name!r}; {names_there(connection)}"


def names_there(connection: sqlite3.Connection) -> str:
    """The names of the most recent runs, for a message."""
    names = [
        name
        for (name,) in connection.execute(
            f"SELECT name FROM runs GROUP BY name ORDER BY max(started_at) DESC LIMIT {SHOWN + 1}"
        )
    ]
    if not names:
        return "it holds no run yet"
    shown = ", ".join(repr(name) for name in names[:SHOWN])
    return f"the names there are {shown}{', ...' if len(names) > SHOWN else ''}"


def why_no_id(connection: sqlite3.Connection, path: Path, ref: Ref) -> str:
    """Why a run id matches no run, with the latest ids."""
    recent = connection.execute(
        f"SELECT id, name FROM runs ORDER BY started_at DESC, seq DESC LIMIT {SHOWN}"
    ).fetchall()
    if not recent:
        return f"{path} holds no run yet"
    named = connection.execute("SELECT 1 FROM runs WHERE name = ? LIMIT 1", (ref.text,)).fetchone()
    hint = f" (a run name: did you mean '{ref.text}@latest'?)" if named else ""
    shown = ", ".join(f"{run_id} ({name})" for run_id, name in recent)
    return (
        f"no run has that id{hint}; a reference is a run id, latest, latest~N or "
        f"NAME@latest~N; the latest runs are {shown}"
    )


def require_name(connection: sqlite3.Connection, path: Path, name: str, shards: bool) -> None:
    """Raise :class:`RunNotFoundError` unless history has runs of ``name``."""
    total, sharded = _counted(connection, name)
    if total > (0 if shards else sharded):
        return
    if total:
        raise RunNotFoundError(
            f"{path} holds only the runs of single shards of {name!r} ({sharded}), "
            "which history leaves out: merge them with `aeval merge`, which records the "
            "merged run, or include them with --shards (shards=True)",
            path=path,
            ref=name,
        )
    raise RunNotFoundError(
        f"no run named {name!r} in {path}: {names_there(connection)}",
        path=path,
        ref=name,
    )


def require_group(connection: sqlite3.Connection, name: str, group: tuple[str, str]) -> None:
    """Raise ``ValueError`` unless a run of ``name`` has rows of the tag or strategy ``group``."""
    kind, key = group
    seen = [
        found
        for (found,) in connection.execute(
            "SELECT DISTINCT key FROM run_groups JOIN runs ON run = seq "
            "WHERE name = ? AND kind = ? ORDER BY key",
            (name, kind),
        )
    ]
    if key in seen:
        return
    plural = "tags" if kind == "tag" else "strategies"
    shown = ", ".join(repr(item) for item in seen) or "none"
    raise ValueError(f"no run of {name!r} has rows of the {kind} {key!r}; {plural}: {shown}")
