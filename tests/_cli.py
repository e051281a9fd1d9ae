"""Running the ``aeval`` command inside the test process, as a shell would run it.

The :func:`cli` fixture calls :data:`main`, the ``aeval`` console script's entry point, with the
test's arguments and gives back its exit code and what it wrote on stdout and stderr. The
targets and strategies that a run imports from its configuration's directory are forgotten
after the test (with the ``sys.path`` entries that came with them), so every test imports its
own ``cli_targets``.
Only what needs a real process (signals, the entry points, a target that never returns)
starts ``python -m aeval``: :func:`run_process`, or ``Popen`` where the test signals it.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import orjson
import pytest

import aeval

__all__ = [
    "DATA",
    "EXAMPLE",
    "ROOT",
    "Cli",
    "Result",
    "cli",
    "beside_progress",
    "forgotten_imports",
    "fresh_imports",
    "main",
    "project",
    "records_of",
    "rows_of",
    "run_process",
    "unmeasured",
    "write_config",
]

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "cli"
EXAMPLE = ROOT / "examples" / "aeval.yaml"
WIDTH = "200"
"""The terminal width the summary tables are laid out for (``COLUMNS``)."""

(_SCRIPT,) = entry_points(group="console_scripts", name="aeval")
main: Callable[[Sequence[str] | None], int] = _SCRIPT.load()
"""The ``aeval`` command as installed: the ``aeval`` console script's entry point."""

_TERMINAL_OVERRIDES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@dataclass(frozen=True, slots=True)
class Result:
    """What one ``aeval`` command did.

    Attributes:
        returncode: The exit code (``main()``'s return value, or a ``SystemExit``'s code).
        stdout: What it wrote on stdout.
        stderr: What it wrote on stderr.
    """

    returncode: int
    stdout: str
    stderr: str


class Cli:
    """Runs ``aeval`` in the test process: ``cli("run", config, cwd=project)``.

    Args:
        capsys: The test's captured stdout and stderr.
        monkeypatch: Undoes the working directory and the environment after the test.
    """

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self._capsys = capsys
        self._monkeypatch = monkeypatch

    def use_default_store(self) -> None:
        """Unset ``AEVAL_STORE``, for a test of the default ``.aeval/runs.sqlite`` (in a
        ``cwd`` of its own)."""
        self._monkeypatch.delenv("AEVAL_STORE", raising=False)

    def __call__(
        self,
        *args: str | Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        """Run ``aeval ARGS...`` in ``cwd`` with ``env`` added to the environment.

        A ``SystemExit`` (argparse's usage errors, ``--version``) gives its code, as it
        would to a shell.
        """
        if cwd is not None:
            self._monkeypatch.chdir(cwd)
        for name, value in (env or {}).items():
            self._monkeypatch.setenv(name, value)
        importlib.invalidate_caches()
        self._capsys.readouterr()
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                raise
        captured = self._capsys.readouterr()
        return Result(code, captured.out, captured.err)


def _installed() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    folders = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    folders += [*site.getsitepackages(), site.getusersitepackages()]
    folders.append(str(Path(aeval.__file__).parent))
    return tuple(Path(folder).resolve() for folder in folders)


def _within(path: Path, folders: tuple[Path, ...]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


@contextmanager
def forgotten_imports() -> Iterator[None]:
    """Forget, on leaving, the modules imported inside from outside Python and aeval.

    These are the targets and strategies that ``aeval run`` imported from a configuration's
    directory; that directory leaves ``sys.path`` too. A module of the same name in another
    test's directory is then imported afresh, with fresh module state.
    """
    path = list(sys.path)
    modules = set(sys.modules)
    try:
        yield
    finally:
        installed = _installed()
        for name in set(sys.modules) - modules:
            file = getattr(sys.modules[name], "__file__", None)
            if file is not None and not _within(Path(file).resolve(), installed):
                del sys.modules[name]
        for entry in set(sys.path) - set(path):
            sys.path_importer_cache.pop(entry, None)
        sys.path[:] = path
        importlib.invalidate_caches()


@pytest.fixture
def fresh_imports() -> Iterator[None]:
    """Forgets, after the test, what it imported from its own directories (see
    :func:`forgotten_imports`)."""
    with forgotten_imports():
        yield


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cli]:
    """Runs ``aeval`` in-process with a fixed width, not on a terminal, with no leftovers.

    Runs are recorded in a store of the test's own (``AEVAL_STORE``), never in the default
    ``.aeval/runs.sqlite`` of the directory the suite runs from; a test of the default
    removes the variable.
    """
    monkeypatch.setenv("COLUMNS", WIDTH)
    monkeypatch.setenv("AEVAL_STORE", str(tmp_path_factory.mktemp("store") / "runs.sqlite"))
    for name in _TERMINAL_OVERRIDES:
        monkeypatch.delenv(name, raising=False)
    with forgotten_imports():
        yield Cli(capsys, monkeypatch)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory holding ``cli_targets.py`` and ``samples.yaml`` (three samples)."""
    shutil.copy(DATA / "cli_targets.py", tmp_path / "cli_targets.py")
    shutil.copy(DATA / "samples.yaml", tmp_path / "samples.yaml")
    return tmp_path


def run_process(
    *args: str | Path, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m aeval ARGS...`` in a child process and wait for it (60 s at most)."""
    return subprocess.run(
        [sys.executable, "-m", "aeval", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": WIDTH, **(env or {})},
    )


_COVERAGE_REQUESTS = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")


def unmeasured(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` with ``env`` added, less coverage's request to measure a child process.

    For a child whose imports or files a test checks: a measured process (pyproject.toml's
    ``patch = ["subprocess"]``) imports coverage and sqlite3 at start-up and writes its data
    file at exit.
    """
    merged = {**os.environ, **(env or {})}
    return {name: value for name, value in merged.items() if name not in _COVERAGE_REQUESTS}


_PROGRESS = re.compile(r"aeval: (evaluating |done: |interrupted: |\d+(/\d+)? samples )")


def beside_progress(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are not ``aeval run``'s progress lines (``aeval: done:
    ...``): a run that went well leaves nothing else there (no ``aeval: error:``)."""
    return [line for line in stderr.splitlines() if not _PROGRESS.match(line)]


def write_config(directory: Path, text: str, name: str = "aeval.yaml") -> Path:
    """Write a configuration file into ``directory``; return its path."""
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def records_of(path: Path) -> list[dict[str, Any]]:
    """Every record of a ``rows.jsonl``: the run's header, the rows and the end record."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def rows_of(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``rows.jsonl``, after checking it starts with the run's header record."""
    records = records_of(path)
    assert records[0]["record"] == "run"
    return [record for record in records if "record" not in record]
