"""The plugin's options, markers and settings, and how marker arguments are resolved."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from .._compare import store_path
from .._exceptions import SampleFileNotFoundError
from .._samples import EvaluationSample, Samples
from .._store._schema import LOCK_TIMEOUT

if TYPE_CHECKING:
    from os import PathLike

__all__ = [
    "LIVE_SKIP_REASON",
    "NO_SAMPLES",
    "Settings",
    "add_options",
    "as_samples",
    "fail",
    "filter_samples",
    "register_markers",
    "resolve_source",
    "scorer_options",
    "settings",
]

LIVE_SKIP_REASON = (
    "live evaluation test (calls a real model): run it with --aeval-live, "
    "set aeval_live = true in the pytest configuration, or set AEVAL_LIVE=1"
)
NO_SAMPLES = "No samples found from any of the specified sources"

_MARKERS = (
    "scorer(concurrency=1, *, timeout=None, repeats=1, keep='all'): configure the Scorer of "
    "the `scorer` fixture and of @evaluation_test (default concurrency: ini aeval_concurrency)",
    "samples(*sources, tags=()): the sample files of the `samples` fixture, merged in order "
    "and kept when they carry any of `tags`; paths resolve against the rootdir, then the test "
    "file's directory",
    "aeval_live: a test that calls a real model; skipped unless --aeval-live, ini "
    "aeval_live = true or AEVAL_LIVE=1",
    "aeval_cases(dataset, tag=None, threshold=0.7): set by @eval_cases; one test per case",
)
_TRUE = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})
_SETTINGS_KEY = pytest.StashKey["Settings"]()


def fail(message: str) -> NoReturn:
    """Fail the test (or collection) with ``message`` alone: no traceback, no chained error."""
    __tracebackhide__ = True
    raise pytest.fail.Exception(message, pytrace=False) from None


def add_options(parser: pytest.Parser) -> None:
    """Register the command-line and ini options."""
    group = parser.getgroup("aeval", "aeval evaluations")
    group.addoption(
        "--aeval-live",
        action="store_true",
        default=False,
        help="Run the tests marked aeval_live (they call real models).",
    )
    group.addoption(
        "--aeval-report-dir",
        metavar="DIR",
        default=None,
        help="Write each test's evaluation report and the suite report "
        "(evaluation-suite-report.md/.json) into DIR.",
    )
    group.addoption(
        "--aeval-store",
        metavar="PATH",
        nargs="?",
        const="",
        default=None,
        help="Record each test's evaluation as a run in the run store at PATH (default: "
        "AEVAL_STORE, else .aeval/runs.sqlite); write --aeval-store=PATH before test paths.",
    )
    group.addoption(
        "--aeval-min-score",
        metavar="PERCENT",
        type=float,
        default=None,
        help="Fail the session when the suite's average evaluation score (0-100) is below PERCENT.",
    )
    group.addoption(
        "--aeval-baseline",
        metavar="REF",
        default=None,
        help="Compare the suite's evaluations with a baseline run (a rows.jsonl or report.json, "
        "or a stored run: run id, latest, latest~1, NAME@latest) and fail the session on a "
        "significant regression, overall or on a tag.",
    )
    group.addoption(
        "--aeval-margin",
        metavar="PP",
        type=float,
        default=0.0,
        help="Percentage points a significant regression must exceed to fail the session "
        "(with --aeval-baseline; default 0).",
    )
    parser.addini(
        "aeval_concurrency",
        "Default concurrency of the Scorers the aeval plugin creates (default 1).",
        default="1",
    )
    parser.addini(
        "aeval_store_lock_timeout",
        "Seconds --aeval-store waits for another process's write lock on the run store before "
        "it stops storing (default 60).",
        default=str(LOCK_TIMEOUT),
    )
    parser.addini(
        "aeval_live",
        "Run the tests marked aeval_live (like --aeval-live).",
        type="bool",
        default=False,
    )


def register_markers(config: pytest.Config) -> None:
    """Declare the plugin's markers (projects run with ``--strict-markers``)."""
    for line in _MARKERS:
        config.addinivalue_line("markers", line)


@dataclass(frozen=True, slots=True)
class Settings:
    """The plugin's configuration for one session.

    Attributes:
        live: Whether tests marked ``aeval_live`` run.
        report_dir: Where reports are written (absolute), or ``None``.
        min_score: The lowest acceptable suite score (0-100), or ``None``.
        concurrency: The default concurrency of the Scorers the plugin creates.
        baseline: The run to compare the suite with (a file, made absolute, or a stored
            run's ref), or ``None``.
        margin: The points a significant regression must exceed to fail the session.
        store: The run store each evaluation is recorded in (absolute), or ``None``
            (``--aeval-store``); a stored baseline is looked up there, else at the default.
        baseline_store: The run store a stored baseline is looked up in.
        store_lock_timeout: Seconds to wait for another process's write lock on the store
            (ini ``aeval_store_lock_timeout``).
    """

    live: bool
    report_dir: Path | None
    min_score: float | None
    concurrency: int
    baseline: str | None = None
    margin: float = 0.0
    store: Path | None = None
    baseline_store: Path | None = None
    store_lock_timeout: float = LOCK_TIMEOUT

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read the options; a bad value raises ``pytest.UsageError`` naming the option."""
        live = (
            bool(config.getoption("aeval_live"))
            or bool(config.getini("aeval_live"))
            or os.environ.get("AEVAL_LIVE", "").strip().lower() in _TRUE
        )
        raw_dir = config.getoption("aeval_report_dir")
        report_dir = None
        if raw_dir:
            report_dir = (config.invocation_params.dir / Path(raw_dir)).resolve()
        min_score = config.getoption("aeval_min_score")
        if min_score is not None and not 0.0 <= min_score <= 100.0:
            raise pytest.UsageError(
                f"--aeval-min-score is a percentage between 0 and 100, got {min_score:g}"
            )
        raw = str(config.getini("aeval_concurrency")).strip()
        try:
            concurrency = int(raw)
        except ValueError:
            concurrency = 0
        if concurrency < 1:
            raise pytest.UsageError(f"aeval_concurrency must be an integer >= 1, got {raw!r}")
        margin = float(config.getoption("aeval_margin"))
        if not 0.0 <= margin <= 100.0:
            raise pytest.UsageError(
                f"--aeval-margin is a number of percentage points from 0 to 100, got {margin:g}"
            )
        here = config.invocation_params.dir
        baseline = config.getoption("aeval_baseline")
        if baseline and (here / baseline).is_file():
            baseline = str((here / baseline).resolve())
        store = _store_path(config.getoption("aeval_store"), here)
        raw_timeout = str(config.getini("aeval_store_lock_timeout")).strip()
        try:
            lock_timeout = float(raw_timeout)
        except ValueError:
            lock_timeout = -1.0
        if not 0.0 < lock_timeout < float("inf"):
            raise pytest.UsageError(
                f"aeval_store_lock_timeout is a number of seconds above 0, got {raw_timeout!r}"
            )
        return cls(
            live,
            report_dir,
            min_score,
            concurrency,
            baseline=baseline or None,
            margin=margin,
            store=store,
            baseline_store=store or (here / store_path(None)).resolve(),
            store_lock_timeout=lock_timeout,
        )


def _store_path(option: str | None, directory: Path) -> Path | None:
    if option is None:
        return None
    if option:
        path = (directory / Path(option).expanduser()).resolve()
        if path.is_dir() or path.suffix == ".py":
            raise pytest.UsageError(
                f"--aeval-store took {option!r} as the run store's path, but it is a test path: "
                "write --aeval-store=PATH, or put --aeval-store after the test paths"
            )
        return path
    env = os.environ.get("AEVAL_STORE", "").strip()
    if env.lower() in _OFF:
        raise pytest.UsageError(
            f"--aeval-store has no path and AEVAL_STORE={env} turns the store off: write "
            "--aeval-store=PATH"
        )
    if env:
        return (directory / Path(env).expanduser()).resolve()
    return (directory / ".aeval" / "runs.sqlite").resolve()


def settings(config: pytest.Config) -> Settings:
    """The session's settings (read once, at configure time)."""
    found = config.stash.get(_SETTINGS_KEY, None)
    if found is None:
        found = Settings.from_config(config)
        config.stash[_SETTINGS_KEY] = found
    return found


def resolve_source(source: str | PathLike[str], *, rootdir: Path, test_dir: Path) -> str | Path:
    """Find a sample file: as given when absolute, else under ``rootdir``, then ``test_dir``.

    A source with a scheme (``https://...``) is returned unchanged, for the loaders.

    Raises:
        SampleFileNotFoundError: No candidate exists; the message lists every place looked.
    """
    text = os.fspath(source)
    if "://" in text:
        return text
    path = Path(text).expanduser()
    candidates = [path] if path.is_absolute() else [rootdir / path, test_dir / path]
    for candidate in dict.fromkeys(candidates):
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
    raise SampleFileNotFoundError(f"File not found; looked in: {looked}", source=text)


def filter_samples(samples: Samples, tags: Iterable[str], *, sources: Iterable[object]) -> Samples:
    """Check that samples were found, then keep those with any of ``tags``.

    Raises:
        ValueError: No sample at all, or none with the tags (the message lists the tags seen).
    """
    if not samples:
        raise ValueError(NO_SAMPLES)
    wanted = tuple(tags)
    kept = samples.filter_by_tags(*wanted)
    if not kept:
        shown = ", ".join(os.fspath(s) if isinstance(s, str | Path) else repr(s) for s in sources)
        seen = ", ".join(samples.tags) or "none"
        raise ValueError(
            f"No sample of {shown} has any of the tags {list(wanted)}; the tags there are: {seen}"
        )
    return kept


def scorer_options(marker: pytest.Mark | None, default_concurrency: int) -> dict[str, Any]:
    """The Scorer keyword arguments given by a ``@pytest.mark.scorer(...)`` marker."""
    options: dict[str, Any] = {"concurrency": default_concurrency}
    if marker is None:
        return options
    if len(marker.args) > 1:
        raise TypeError(
            "@pytest.mark.scorer takes the concurrency as its only positional argument; "
            "pass the other options by keyword"
        )
    if marker.args:
        options["concurrency"] = marker.args[0]
    options.update(marker.kwargs)
    return options


def as_samples(value: object) -> Samples | None:
    """``value`` as Samples when it already holds samples (not paths), else ``None``."""
    if isinstance(value, Samples):
        return value
    if isinstance(value, EvaluationSample):
        return Samples([value])
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        items = list(value)
        if items and all(isinstance(item, EvaluationSample) for item in items):
            return Samples(items)
    return None
