"""What a report knows about the run behind it: when, how, from which commit, how far."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

__all__ = ["Gate", "GateCheck", "RunInfo", "current_git_commit", "git_commit", "timestamp"]

_TEXTS = (
    "aeval_version",
    "git_commit",
    "shard",
    "config_digest",
    "dataset_digest",
    "executor",
    "tools",
)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One threshold of a run's gate and how the run fared against it.

    Attributes:
        name: What is checked: ``"score"``, ``"tag smoke"``, ``"kappa judge"``, ``"errors"``
            or ``"scored rows"``.
        bound: ``"min"`` when the value must reach ``threshold``, ``"max"`` when it must not
            exceed it.
        threshold: The limit (a percent; a kappa for a kappa check; a row count for
            ``errors`` given as a count).
        actual: The value reached, ``None`` when nothing counts toward it.
        passed: Whether the threshold is met; ``None`` when it was not checked (a partial run).
        text: The check in words (``score 66.67% < 80.00%``).
    """

    name: str
    bound: Literal["min", "max"]
    threshold: float
    actual: float | None
    passed: bool | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        """As JSON-ready data (the keys are the attribute names)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateCheck:
        """Rebuild a check written by :meth:`to_dict`."""
        bound = data["bound"]
        if bound not in ("min", "max"):
            raise ValueError(f"a gate check's bound is 'min' or 'max', got {bound!r}")
        actual, passed = data.get("actual"), data.get("passed")
        return cls(
            name=str(data["name"]),
            bound=bound,
            threshold=float(data["threshold"]),
            actual=None if actual is None else float(actual),
            passed=None if passed is None else bool(passed),
            text=str(data["text"]),
        )


@dataclass(frozen=True, slots=True)
class Gate:
    """The thresholds a run was gated on (``aeval run``, ``aeval merge``) and the verdict.

    Attributes:
        verdict: ``"passed"`` (every threshold met), ``"missed"`` (one or more missed) or
            ``"none"`` (no threshold configured, or none checked: a partial run, a shard).
        checks: The thresholds, in the order the summary lists them.
    """

    verdict: Literal["passed", "missed", "none"]
    checks: tuple[GateCheck, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """As JSON-ready data: ``verdict`` and ``checks``."""
        return {"verdict": self.verdict, "checks": [check.to_dict() for check in self.checks]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Gate:
        """Rebuild a gate written by :meth:`to_dict`.

        Raises:
            ValueError: The data is not a gate.
        """
        verdict = data["verdict"]
        if verdict not in ("passed", "missed", "none"):
            raise ValueError(f"a gate's verdict is passed, missed or none, got {verdict!r}")
        return cls(verdict, tuple(GateCheck.from_dict(c) for c in data.get("checks") or ()))


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The header of a report: when the run ran, with what settings, and whether it finished.

    Attributes:
        started_at: When the run started (Unix time), if known.
        finished_at: When it ended, if it did.
        complete: Whether the run went through every sample. A run stopped by Ctrl-C,
            SIGTERM, a cancellation or an error is partial.
        samples_expected: The samples the source held, when it had a length.
        concurrency: The Scorer's concurrency.
        repeats: Runs per sample.
        strategies: The strategies' names, in order.
        aeval_version: The aeval version that ran.
        git_commit: The commit checked out in the working directory, when there is one.
        warnings: What went wrong around the evaluation (a sink that failed, …).
        shard: ``"I/N"`` for the run of one shard of a dataset (``aeval run --shard``).
        config_digest: Identifies the configuration behind the run (a SHA-256, hex), so
            that only shards of one configuration merge.
        dataset_digest: Identifies the whole dataset (a SHA-256 of its sample names, in
            order), so that only shards of one dataset merge.
        dataset_samples: The samples of the whole dataset, of which a shard ran a part.
        executor: Where the samples ran, when not in this process (``"ray, 8 workers"``).
        gate: The thresholds the command line gated the run on and its verdict, once known.
        tools: Where ``@aeval.tool`` functions got their results when not called live:
            ``"fixtures"`` (the samples' ``tools:``) or ``"replay:REF"``; ``None`` for live
            tools.
    """

    started_at: float | None = None
    finished_at: float | None = None
    complete: bool = True
    samples_expected: int | None = None
    concurrency: int | None = None
    repeats: int = 1
    strategies: tuple[str, ...] = ()
    aeval_version: str | None = None
    git_commit: str | None = None
    warnings: tuple[str, ...] = field(default=())
    shard: str | None = None
    config_digest: str | None = None
    dataset_digest: str | None = None
    dataset_samples: int | None = None
    executor: str | None = None
    gate: Gate | None = None
    tools: str | None = None

    @property
    def duration(self) -> float | None:
        """Wall-clock seconds from start to finish, when both are known."""
        if self.started_at is None or self.finished_at is None:
            return None
        return max(0.0, self.finished_at - self.started_at)

    def replace(self, **changes: Any) -> RunInfo:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The header as JSON-ready data (the keys are the attribute names; ``gate`` and
        ``tools`` only when there is one)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["strategies"] = list(self.strategies)
        data["warnings"] = list(self.warnings)
        gate = data.pop("gate")
        if gate is not None:
            data["gate"] = gate.to_dict()
        if data["tools"] is None:
            del data["tools"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunInfo:
        """Rebuild a header written by :meth:`to_dict`; unknown keys are ignored.

        Raises:
            ValueError: A field has the wrong type or is out of range (the message names it).
        """
        from .._util._jsonsafe import read_count, read_list, read_number, read_text

        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        for key in ("strategies", "warnings"):
            if key in values:
                values[key] = tuple(read_text(item, key) for item in read_list(values[key], key))
        for key in ("started_at", "finished_at"):
            if key in values:
                values[key] = read_number(values[key], key)
        for key in ("samples_expected", "concurrency", "repeats", "dataset_samples"):
            if key in values:
                values[key] = read_count(values[key], key)
        for key in _TEXTS:
            if key in values:
                values[key] = read_text(values[key], key)
        if "complete" in data and not isinstance(data["complete"], bool):
            raise ValueError(f"field 'complete': expected true or false, got {data['complete']!r}")
        if values.get("repeats") == 0:
            raise ValueError("field 'repeats': expected an integer >= 1, got 0")
        if "gate" in values:
            values["gate"] = Gate.from_dict(values["gate"])
        return cls(**values)


_COMMITS: dict[str, str | None] = {}


def _commit_of(directory: str) -> str | None:
    if directory in _COMMITS:
        return _COMMITS[directory]
    commit = _find_commit(directory)
    if len(_COMMITS) < 64:
        _COMMITS[directory] = commit
    return commit


def _find_commit(directory: str) -> str | None:
    for folder in (Path(directory), *Path(directory).parents):
        dotgit = folder / ".git"
        try:
            if dotgit.is_file():
                line = dotgit.read_text(encoding="utf-8").strip()
                if not line.startswith("gitdir:"):
                    return None
                gitdir = (folder / line.removeprefix("gitdir:").strip()).resolve()
            elif dotgit.is_dir():
                gitdir = dotgit
            else:
                continue
            return _resolve_head(gitdir)
        except OSError:
            return None
    return None


def _resolve_head(gitdir: Path) -> str | None:
    head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
    if _SHA.fullmatch(head):
        return head
    if not head.startswith("ref:"):
        return None
    ref = head.removeprefix("ref:").strip()
    common = gitdir
    if (gitdir / "commondir").is_file():
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (gitdir, common):
        loose = base / ref
        if loose.is_file():
            value = loose.read_text(encoding="utf-8").strip()
            return value if _SHA.fullmatch(value) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _SHA.fullmatch(sha):
                return sha
    return None


def git_commit(directory: str | os.PathLike[str] | None = None) -> str | None:
    """The commit checked out in ``directory`` (default: the working directory), or ``None``.

    Reads ``.git`` directly (no ``git`` process), following worktrees and packed refs; the
    answer is cached per directory. It does file I/O: call it off the event loop.
    """
    return _commit_of(os.path.abspath(directory if directory is not None else os.getcwd()))


async def current_git_commit() -> str | None:
    """:func:`git_commit` of the working directory, read in a worker thread the first time."""
    directory = os.getcwd()
    if directory in _COMMITS:
        return _COMMITS[directory]
    import anyio.to_thread

    return await anyio.to_thread.run_sync(_commit_of, directory)


def timestamp(value: float | None) -> str:
    """A Unix time as ``2026-11-30 19:50:42 UTC`` (``unknown`` for ``None``)."""
    if value is None:
        return "unknown"
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
