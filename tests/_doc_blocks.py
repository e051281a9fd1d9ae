"""The code blocks of README.md and docs/*.md, and running them as a reader would.

:func:`blocks` reads a page's fenced blocks with the directives written next to them:

- ``# file: NAME`` as a block's first line, or ``<!-- file: NAME -->`` just before it: the
  block is saved as ``NAME`` (a configuration, a dataset, a module) for the blocks after it;
- ``<!-- not run: REASON -->`` just before it: the block is not run, for the reason shown;
- ``<!-- exit: N -->`` just before it: its commands exit with ``N`` (a gate that fails).

``python -m`` of this file (:func:`main`) runs one page's blocks in order in a directory that
stands for a clone of the repository (``examples/`` copied, the worktree's ``aeval`` linked):
Python blocks in one namespace (top-level ``await`` as in ``python -m asyncio``), shell and
console commands with ``bash`` (``aeval`` on ``PATH``), YAML and JSON blocks saved as their
file, or otherwise checked as a dataset or a configuration. ``pip install`` steps are checked
against the installed environment instead of being run. Output blocks (``text``) are not run.
"""

from __future__ import annotations

import ast
import asyncio
import configparser
import contextlib
import importlib.metadata
import importlib.resources
import inspect
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
import traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

SHELL = frozenset({"bash", "sh", "console"})
PYTHON = frozenset({"python"})
DATA = frozenset({"yaml", "json", "toml", "ini"})
OUTPUT = frozenset({"text"})
KINDS = SHELL | PYTHON | DATA | OUTPUT

COMMAND_TIMEOUT = 240.0
"""Seconds one command may take before it counts as hung."""

_DIRECTIVE = re.compile(r"<!--\s*(file|not run|exit):\s*(.*?)\s*-->", re.DOTALL)
_FIRST_LINE_FILE = re.compile(r"\A(?:#|//)\s*file:\s*(\S+)[^\n]*\n")
_PIP = re.compile(r"\bpip install\s+([^&;|\n#]+)")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block of a page and what its directives say."""

    page: str
    line: int
    kind: str
    text: str
    file: str | None = None
    not_run: str | None = None
    exit: int = 0

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running one block did: ``passed``, ``failed``, ``not run`` or ``output``."""

    where: str
    kind: str
    status: str
    detail: str = ""


class PageError(Exception):
    """A page breaks the rules of :func:`blocks` (an unfenced block, an unknown kind)."""


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order, with their directives.

    Raises:
        PageError: An indented code block, a fence without a kind, or a kind not in ``KINDS``.
    """
    name = page.relative_to(ROOT).as_posix()
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    found: list[Block] = []
    problems: list[str] = []
    for index, token in enumerate(tokens):
        line = (token.map or (0, 0))[0] + 1
        if token.type == "code_block":
            problems.append(f"{name}:{line}: an indented block; fence it with its kind")
            continue
        if token.type != "fence":
            continue
        kind = token.info.split(maxsplit=1)[0] if token.info else ""
        if kind not in KINDS:
            problems.append(
                f"{name}:{line}: a block of kind {kind!r}; fence it as one of {sorted(KINDS)}"
            )
            continue
        directives: dict[str, str] = {}
        before = tokens[index - 1] if index else None
        if before is not None and before.type == "html_block":
            directives = dict(_DIRECTIVE.findall(before.content))
        text = token.content
        file = directives.get("file")
        if file is None and (match := _FIRST_LINE_FILE.match(text)):
            file = match.group(1)
        found.append(
            Block(
                page=name,
                line=line,
                kind=kind,
                text=text,
                file=file,
                not_run=directives.get("not run"),
                exit=int(directives.get("exit", "0")),
            )
        )
    if problems:
        raise PageError("\n".join(problems))
    return found


# --- running a page (in a process of its own) ---------------------------------------------


def clone(where: Path) -> None:
    """Make ``where`` stand for a clone of the repository: ``examples/`` copied, ``aeval``
    linked (the worktree's, not the installed one)."""
    shutil.copytree(
        ROOT / "examples",
        where / "examples",
        ignore=shutil.ignore_patterns("__pycache__", ".aeval", "aeval-results"),
    )
    (where / "aeval").symlink_to(ROOT / "aeval", target_is_directory=True)


def environment(where: Path) -> dict[str, str]:
    """The environment the page's commands run in: ``aeval`` on ``PATH``, the clone on
    ``PYTHONPATH``, no store or terminal settings of the caller."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AEVAL_", "PYTEST_", "COV_", "FORCE_COLOR", "TTY_"))
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(where)
    env["COLUMNS"] = "120"
    env["NO_COLOR"] = "1"
    return env


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def missing_for_pip(arguments: str) -> list[str]:
    """What ``pip install ARGUMENTS`` would install that this environment lacks."""
    from packaging.requirements import Requirement

    missing = []
    for word in shlex.split(arguments):
        if word.startswith("-"):
            continue
        if word.startswith("."):
            word = "aeval-engine" + word[1:]
        requirement = Requirement(word)
        if not _installed(requirement.name):
            missing.append(requirement.name)
            continue
        for extra in sorted(requirement.extras):
            for needed in importlib.metadata.requires(requirement.name) or ():
                need = Requirement(needed)
                wanted = need.marker is not None and need.marker.evaluate({"extra": extra})
                if wanted and not _installed(need.name):
                    missing.append(f"{need.name} (extra {extra})")
    return missing


def without_pip(script: str) -> str:
    """``script`` with its ``pip install`` steps replaced by ``true``.

    Raises:
        AssertionError: A step installs something the environment lacks.
    """

    def checked(match: re.Match[str]) -> str:
        missing = missing_for_pip(match.group(1))
        assert not missing, f"`{match.group(0).strip()}` needs {', '.join(missing)}"
        return "true "

    return _PIP.sub(checked, script)


def commands(block: Block) -> list[str]:
    """The commands of a shell block: the whole script, or a console's ``$`` lines."""
    if block.kind != "console":
        return [block.text]
    found: list[str] = []
    going: list[str] | None = None
    for line in block.text.splitlines():
        if going is not None:
            going.append(line)
        elif line.startswith("$ "):
            going = [line[2:]]
        else:
            continue
        if not line.endswith("\\"):
            found.append("\n".join(going))
            going = None
    return found


def _run_in_group(arguments: list[str], where: Path) -> subprocess.CompletedProcess[str]:
    """Run a command in a process group of its own, and end whatever it leaves running
    (a server started with ``&`` whose ``kill`` was never reached, Ray's processes) once it
    exits or times out. Its output goes to files, which a process left behind cannot hold
    open the way it would a pipe."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            arguments,
            cwd=where,
            env=environment(where),
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        try:
            process.wait(timeout=COMMAND_TIMEOUT)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(
            arguments, process.returncode, stdout.read(), stderr.read()
        )


def run_shell(block: Block, where: Path) -> None:
    for command in commands(block):
        script = without_pip(command)
        done = _run_in_group(["bash", "-e", "-o", "pipefail", "-c", script], where)
        assert done.returncode == block.exit, (
            f"`{command}` exited with {done.returncode}, not {block.exit}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )


def check_data(block: Block, where: Path) -> None:
    """A data block, saved or not: parsed, and a YAML list loaded as samples, a YAML mapping
    with a ``target`` validated as an ``aeval run`` configuration."""
    import yaml

    if block.kind == "json":
        json.loads(block.text)
        return
    if block.kind == "toml":
        tomllib.loads(block.text)
        return
    if block.kind == "ini":
        configparser.ConfigParser().read_string(block.text)
        return
    data = yaml.safe_load(block.text)
    if block.file is not None:
        path = where / block.file
    else:
        path = where / ".doc-blocks" / f"line-{block.line}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(block.text, encoding="utf-8")
    if isinstance(data, list):
        from aeval import Samples

        asyncio.run(Samples.load(path))
    elif isinstance(data, dict) and "target" in data:
        _config_problems(data, path)


def _config_problems(data: dict[str, Any], path: Path) -> None:
    """Check a configuration block against the schema ``aeval schema`` prints (the file the
    package ships): raise naming the block's file and every problem."""
    import jsonschema  # type: ignore[import-untyped]

    schema = json.loads(
        importlib.resources.files("aeval")
        .joinpath("schema/aeval-config.schema.json")
        .read_text(encoding="utf-8")
    )
    problems = [
        f"{'.'.join(map(str, error.absolute_path)) or '(top level)'}: {error.message}"
        for error in jsonschema.Draft202012Validator(schema).iter_errors(data)
    ]
    if problems:
        raise ValueError(f"{path}: not a valid aeval configuration: " + "; ".join(problems))


class PythonBlocks:
    """The page's Python blocks, run in one namespace as in ``python -m asyncio``."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
        self.runner = asyncio.Runner()

    def run(self, block: Block) -> None:
        code = compile(
            block.text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
        if code.co_flags & inspect.CO_COROUTINE:
            self.runner.run(eval(code, self.namespace))
        else:
            exec(code, self.namespace)

    def close(self) -> None:
        self.runner.close()


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        yield out


def run_page(page: Path, where: Path) -> list[Outcome]:
    """Run ``page``'s blocks in order in ``where`` (a clone, see :func:`clone`)."""
    outcomes: list[Outcome] = []
    python = PythonBlocks()
    try:
        for block in blocks(page):
            if block.kind in OUTPUT:
                outcomes.append(Outcome(block.where, block.kind, "output"))
                continue
            if block.not_run is not None:
                outcomes.append(Outcome(block.where, block.kind, "not run", block.not_run))
                continue
            with _captured() as out:
                try:
                    if block.file is not None:
                        target = where / block.file
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_text(block.text, encoding="utf-8")
                    if block.kind in DATA:
                        check_data(block, where)
                    elif block.file is not None:
                        pass
                    elif block.kind in SHELL:
                        run_shell(block, where)
                    else:
                        python.run(block)
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    detail = "".join(traceback.format_exception(exc)[-12:])
                    outcomes.append(
                        Outcome(
                            block.where, block.kind, "failed", f"{out.getvalue()[-2000:]}{detail}"
                        )
                    )
                    continue
            outcomes.append(Outcome(block.where, block.kind, "passed"))
    finally:
        python.close()
    return outcomes


def main() -> None:
    """``python _doc_blocks.py PAGE RESULTS``: run PAGE in the working directory (a clone),
    writing the outcomes as JSON to RESULTS."""
    page, results = Path(sys.argv[1]), Path(sys.argv[2])
    where = Path.cwd()
    sys.path[0] = str(where)
    os.environ.update({"PYTHONPATH": str(where), "COLUMNS": "120", "NO_COLOR": "1"})
    outcomes = run_page(page, where)
    results.write_text(json.dumps([asdict(outcome) for outcome in outcomes]), encoding="utf-8")


if __name__ == "__main__":
    main()
