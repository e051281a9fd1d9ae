"""The package's layers, read from the source: which module may import which.

Bottom to top (a module imports only from its own layer or below):

0. foundation: ``_version``, ``_exceptions``, ``_model_types`` (the chat and embedding
   values), ``aeval.abc`` (every contract), ``aeval._util`` (numbers, statistics, groups, the
   plugin registry, single-flight, JSON safety, files, the ``__module__`` rewrite)
1. traces: ``aeval.trace`` (per-sample traces, ``@tool``, capture hooks, fixtures and replay;
   low so that the model clients record their calls and everything above reads traces) and
   ``aeval._conversation`` (the values of multi-turn conversations: what a target sees each
   turn, the transcript it leaves)
2. models: ``aeval.models`` (the OpenAI-compatible clients over httpx, the local embedder)
3. samples: ``aeval._samples`` (the sample model, formats, loaders, limits, which sources
   stream)
4. reporting: ``aeval._reporting`` (results and rows, the row codec, run info, the
   aggregator, the report, judging, assertions) and ``_display``
5. engine: ``aeval._engine`` (the Scorer, a run, workers, threads, callables, executors,
   sinks, shards, sync, the builder, redaction, progress, the HTTP target)
6. strategies: ``aeval.strategies``
7. history: ``aeval._store`` (the run store, its labels and what is read from them alone),
   ``aeval._compare`` (the statistics of comparing two runs only)
8. formatters: ``aeval.formatters``, every rendering of every subject (reports, comparisons,
   histories, run lists, suite reports, the terminal's tables)
9. online evaluation: ``aeval.online`` (the evaluator a live service runs)
10. the cluster executor: ``aeval.ray`` (a Scorer's samples on Ray workers)
11. the testing kit: ``aeval.testing``
12. the edges: ``aeval`` itself, ``aeval._cli``, ``aeval._view`` (the ``aeval view`` web
   app), ``aeval._pytest_plugin``, ``aeval.pytest_plugin``, ``aeval.__main__``

Imports under ``if TYPE_CHECKING:`` are types only and do not count. An import inside a
function (loaded when it runs) counts as one at the top does: no folder imports a folder above
it. The upward imports the package still makes are listed edge by edge in
:data:`KNOWN_UPWARD`, each saying why it is there; the list can only shrink (the test fails
when a listed edge is gone, so that it is taken off), and no new edge may join it.
Besides:

- strategies never import httpx, the formatters, the Scorer or the command line;
- nothing but the edges imports the command line or the pytest plugin;
- no module imports another module's private name (``from x import _name``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "aeval"

LAYERS: list[tuple[str, ...]] = [
    (
        "aeval._version",
        "aeval._exceptions",
        "aeval._model_types",
        "aeval.abc",
        "aeval._util",
    ),
    ("aeval.trace", "aeval._conversation"),
    ("aeval.models",),
    ("aeval._samples",),
    ("aeval._reporting", "aeval._display"),
    ("aeval._engine",),
    ("aeval.strategies",),
    ("aeval._store", "aeval._compare"),
    ("aeval.formatters",),
    ("aeval.online",),
    ("aeval.ray",),
    ("aeval.testing",),
    (
        "aeval",
        "aeval._cli",
        "aeval._view",
        "aeval._pytest_plugin",
        "aeval.pytest_plugin",
        "aeval.__main__",
    ),
]

KNOWN_UPWARD: dict[tuple[str, str], str] = {
    # The report renders, saves and prints itself (report.format, save, save_as, print).
    ("aeval._reporting._report", "aeval.formatters._save"): "report.save and save_as",
    ("aeval._reporting._report", "aeval.formatters._registry"): "report.format",
    ("aeval._reporting._report", "aeval.formatters._report_terminal"): "report.print",
    # assert_that(comparison) hands a comparison to its assertions.
    ("aeval._reporting._assertions", "aeval._compare"): "assert_that(comparison)",
    # A comparison renders and prints itself (comparison.format, save_as, print).
    ("aeval._compare._comparison", "aeval.formatters._registry"): "comparison.format, save_as",
    (
        "aeval._compare._comparison",
        "aeval.formatters._comparison_terminal",
    ): "comparison.print",
    # A comparison side given as a report.json reads it through the JSON formatter's reader.
    ("aeval._compare._sides", "aeval.formatters.json"): "report_from_json",
    # Replay.load and Scorer.rescore read their stored run through the comparison's reader.
    ("aeval.trace._fixtures", "aeval._compare._refs"): "Replay.load reads a stored run",
    ("aeval._engine._rescore", "aeval._compare._refs"): "Scorer.rescore reads a stored run",
}
"""The upward imports (all inside functions) the package still makes, importer to imported
module, each with the facade that makes it: an allowlist that may only shrink."""

EDGES = ("aeval._cli", "aeval._view", "aeval._pytest_plugin", "aeval.pytest_plugin")


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    names: tuple[str, ...]
    lazy: bool
    line: int


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """The layer of ``module``: the most specific prefix listed wins."""
    best, depth = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if _within(module, prefix) and prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    if best < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(module: str, source: str, *, is_package: bool = False) -> list[Import]:
    """Every aeval or httpx import of ``module``, resolved to absolute names."""
    found: list[Import] = []
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit(other, lazy)
                continue
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                names = tuple(alias.name for alias in child.names)
                if base == "aeval" or base.startswith(("aeval.", "httpx")):
                    for name in names:
                        target = f"{base}.{name}"
                        if (PACKAGE.parent / Path(*target.split("."))).with_suffix(
                            ".py"
                        ).exists() or (PACKAGE.parent / Path(*target.split("."))).is_dir():
                            found.append(Import(module, target, (), inner, child.lineno))
                        else:
                            found.append(Import(module, base, (name,), inner, child.lineno))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] in ("aeval", "httpx"):
                        found.append(Import(module, alias.name, (), inner, child.lineno))
            visit(child, inner)

    visit(ast.parse(source), False)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def problems(imports: list[Import]) -> list[str]:
    """What breaks the rules in the module docstring, one line each."""
    found: list[str] = []
    for item in imports:
        where = f"{item.importer}:{item.line} imports {item.target}"
        if item.target.startswith("httpx"):
            if _within(item.importer, "aeval.strategies"):
                found.append(f"{where}: strategies never import httpx")
            continue
        importer, target = layer_of(item.importer), layer_of(item.target)
        if any(_within(item.target, edge) for edge in EDGES) and importer != len(LAYERS) - 1:
            found.append(
                f"{where}: only the edges import the command line, the viewer or the pytest plugin"
            )
        if _within(item.importer, "aeval.strategies") and any(
            _within(item.target, banned)
            for banned in ("aeval.formatters", "aeval._engine._scorer", "aeval._cli")
        ):
            found.append(f"{where}: strategies never import the formatters, Scorer or CLI")
        if target > importer and (item.importer, item.target) not in KNOWN_UPWARD:
            found.append(
                f"{where}: layer {importer} ({LAYERS[importer][0]}…) may not import "
                f"layer {target} ({LAYERS[target][0]}…)"
            )
        for name in item.names:
            if name.startswith("_") and not name.startswith("__"):
                found.append(f"{where}: imports the private name {name}")
    return found


def package_imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += imports_of(
            module_name(path),
            path.read_text(encoding="utf-8"),
            is_package=path.name == "__init__.py",
        )
    return found


def test_every_module_is_in_a_layer() -> None:
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path))


def test_the_package_keeps_its_layers() -> None:
    assert problems(package_imports()) == []


def test_every_known_upward_import_is_still_made() -> None:
    made = {
        (item.importer, item.target)
        for item in package_imports()
        if not item.target.startswith("httpx") and layer_of(item.target) > layer_of(item.importer)
    }
    gone = sorted(set(KNOWN_UPWARD) - made)
    assert gone == [], f"take these edges off KNOWN_UPWARD in {__file__}: {gone}"


def test_an_import_inside_a_function_is_read() -> None:
    source = "def f():\n    async def g():\n        from ..formatters import save_report\n"
    (found,) = imports_of("aeval._engine._sinks", source)
    assert (found.target, found.lazy, found.line) == ("aeval.formatters", True, 3)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "aeval._reporting._report",
            "from .._engine._scorer import Scorer\n",
            "aeval._reporting._report:1 imports aeval._engine._scorer: layer 4 "
            "(aeval._reporting…) may not import layer 5 (aeval._engine…)",
        ),
        (
            "aeval._engine._scorer",
            "def f():\n    from ..formatters import get_formatter\n",
            "aeval._engine._scorer:2 imports aeval.formatters: layer 5 (aeval._engine…) may not "
            "import layer 8 (aeval.formatters…)",
        ),
        (
            "aeval._store._store",
            "from ..formatters._history import history_json\n",
            "aeval._store._store:1 imports aeval.formatters._history: layer 7 (aeval._store…) "
            "may not import layer 8 (aeval.formatters…)",
        ),
        (
            "aeval._compare._sides",
            "def f():\n    from ..formatters._comparison_html import render_html\n",
            "aeval._compare._sides:2 imports aeval.formatters._comparison_html: layer 7 "
            "(aeval._store…) may not import layer 8 (aeval.formatters…)",
        ),
        (
            "aeval.strategies.judge",
            "import httpx\n",
            "aeval.strategies.judge:1 imports httpx: strategies never import httpx",
        ),
        (
            "aeval.formatters.html",
            "from .._cli._config import ConfigError\n",
            "aeval.formatters.html:1 imports aeval._cli._config: only the edges import the "
            "command line, the viewer or the pytest plugin",
        ),
        (
            "aeval._store._store",
            "from .._view import serve\n",
            "aeval._store._store:1 imports aeval._view: only the edges import the command line, "
            "the viewer or the pytest plugin",
        ),
        (
            "aeval._engine._sinks",
            "from .._reporting._results import _freeze\n",
            "aeval._engine._sinks:1 imports aeval._reporting._results: imports the private "
            "name _freeze",
        ),
    ],
)
def test_a_wrong_import_is_reported(module: str, source: str, expected: str) -> None:
    assert expected in problems(imports_of(module, source))


def test_allowed_imports_are_not_reported() -> None:
    allowed = (
        "from typing import TYPE_CHECKING\n"
        "from ._results import EvaluationRow\n"
        "if TYPE_CHECKING:\n    from .._engine._scorer import Scorer\n"
        "def save():\n    from ..formatters._save import save_report\n"
    )
    assert problems(imports_of("aeval._reporting._report", allowed)) == []
    facade = "def format():\n    from ..formatters._registry import render\n"
    assert problems(imports_of("aeval._compare._comparison", facade)) == []
