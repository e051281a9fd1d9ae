"""Every third-party module aeval imports is declared by the install that brings its code.

The imports are read from the source (``ast``): module-level ones, those inside functions,
and ``importlib.import_module("name")`` with a literal name. Imports under
``if TYPE_CHECKING:`` are types only, and an import inside ``try: ... except ImportError``
whose handler goes on without it is optional by construction, so neither counts (a handler
that raises, say to name the extra, does not make the import optional). Each module is
mapped to its distribution with ``importlib.metadata.packages_distributions()``; the
distribution must be a core dependency in pyproject.toml, or belong to the extra that owns
the file (``aeval/ray/`` needs ``ray``, the local embedder ``local``, ...). A missing
declaration is the bug a fresh ``pip install '.[ray]'`` meets and a development install
hides: another extra brings the module in. The examples are held to the same rule: what
they import beyond aeval is the ``examples`` extra.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "aeval"
EXAMPLES = ROOT / "examples"
SOURCES = sorted(PACKAGE.rglob("*.py")) + sorted(EXAMPLES.rglob("*.py"))
# The examples import each other (the folder is on sys.path when they run).
LOCAL_MODULES = frozenset(path.stem for path in EXAMPLES.rglob("*.py"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

# The files an extra owns (paths relative to the repository root, prefixes): what they
# import may come from the core dependencies or from that extra.
OWNERS: dict[str, str] = {
    "aeval/ray/": "ray",
    "aeval/models/local": "local",
    "aeval/models/_local": "local",
    "aeval/online/_otel.py": "otel",
    "aeval/trace/otel": "otel",
    "aeval/strategies/pii.py": "pii",
    "aeval/_view/": "view",
    "aeval/integrations/openai_agents": "openai-agents",
    "examples/travel_openai_agents.py": "openai-agents",
    "aeval/integrations/pydantic_ai": "pydantic-ai",
    "examples/travel_pydantic_ai.py": "pydantic-ai",
    "aeval/integrations/langchain": "langchain",
    "examples/travel_langgraph.py": "langchain",
    "aeval/integrations/openai": "openai",
    "examples/travel_openai.py": "openai",
    "examples/": "examples",
}
# What the program that loads a file provides: pytest loads the plugin, so it is there, and
# the openai_server fixture's module is imported by test modules only (aeval.testing loads it
# on first use of the fixture).
HOSTED: dict[str, frozenset[str]] = {
    "aeval/pytest_plugin.py": frozenset({"pytest"}),
    "aeval/_pytest_plugin/": frozenset({"pytest"}),
    "aeval/testing/_fixture.py": frozenset({"pytest"}),
}


@dataclass(frozen=True, slots=True)
class Use:
    """One import of a third-party module: where, and which top-level module."""

    path: str
    line: int
    module: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.module}"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"pyproject.toml: cannot read the requirement {requirement!r}"
    return normalise(match[1])


def declared(extra: str | None) -> set[str]:
    project = PYPROJECT["project"]
    if extra is None:
        return {requirement_name(r) for r in project["dependencies"]}
    return {requirement_name(r) for r in project["optional-dependencies"][extra]}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _works_without_it(node: ast.Try) -> bool:
    """Whether the ``try`` catches ImportError and goes on (a handler that raises does not)."""
    for handler in node.handlers:
        caught = handler.type
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        for name in names:
            if isinstance(name, ast.Name) and name.id in {"ImportError", "ModuleNotFoundError"}:
                return not any(isinstance(statement, ast.Raise) for statement in handler.body)
    return False


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.level == 0 and node.module else []
    if isinstance(node, ast.Call) and node.args:
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        first = node.args[0]
        if name == "import_module" and isinstance(first, ast.Constant):
            return [str(first.value)] if isinstance(first.value, str) else []
    return []


def _walk(node: ast.AST, path: str, uses: list[Use]) -> None:
    if isinstance(node, ast.If) and _is_type_checking(node):
        for statement in node.orelse:
            _walk(statement, path, uses)
        return
    if isinstance(node, ast.Try) and _works_without_it(node):
        for part in [*node.handlers, *node.orelse, *node.finalbody]:
            _walk(part, path, uses)
        return
    for module in _imported(node):
        top = module.split(".")[0]
        if top != "aeval" and top not in sys.stdlib_module_names and top not in LOCAL_MODULES:
            uses.append(Use(path, getattr(node, "lineno", 0), top))
    for child in ast.iter_child_nodes(node):
        _walk(child, path, uses)


def third_party_imports(files: list[Path]) -> list[Use]:
    uses: list[Use] = []
    for file in files:
        path = file.relative_to(ROOT).as_posix()
        _walk(ast.parse(file.read_text(encoding="utf-8"), path), path, uses)
    return uses


@functools.cache
def installed() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions_of(module: str) -> set[str]:
    """What may install ``module`` (several for a namespace such as ``opentelemetry``).

    A module that is not installed here is taken to come from the distribution of its name.
    """
    found = installed().get(module) or [module]
    return {normalise(name) for name in found}


def owner(path: str) -> str | None:
    return next((extra for prefix, extra in OWNERS.items() if path.startswith(prefix)), None)


def undeclared(uses: list[Use]) -> list[str]:
    core = declared(None)
    problems = []
    for use in uses:
        candidates = distributions_of(use.module)
        extra = owner(use.path)
        allowed = core | (declared(extra) if extra else set())
        allowed |= {d for prefix, ds in HOSTED.items() if use.path.startswith(prefix) for d in ds}
        if not candidates & allowed:
            where = f"the core dependencies or the {extra!r} extra" if extra else "core"
            names = " or ".join(repr(name) for name in sorted(candidates))
            problems.append(f"{use}, from {names}, which {where} do not declare")
    return problems


def test_every_third_party_import_is_declared_where_its_code_is_installed() -> None:
    uses = third_party_imports(SOURCES)
    assert len({use.module for use in uses}) >= 10, "the scan found too few imports to trust"
    problems = undeclared(uses)
    assert not problems, (
        "declare these in pyproject.toml ([project].dependencies or the extra that owns the "
        "file), or stop importing them:\n" + "\n".join(problems)
    )


def test_every_extra_that_owns_code_declares_only_what_that_code_imports() -> None:
    uses = third_party_imports(SOURCES)
    for extra in sorted(set(OWNERS.values())):
        imported = {d for u in uses if owner(u.path) == extra for d in distributions_of(u.module)}
        unused = declared(extra) - imported
        assert not unused, (
            f"the {extra!r} extra declares {sorted(unused)}, which no file it owns imports"
        )
    used = {d for u in uses if u.path.startswith("aeval/") for d in distributions_of(u.module)}
    assert declared(None) <= used, f"core dependencies never imported: {declared(None) - used}"


def test_the_scan_sees_imports_in_functions_and_skips_types_and_optional_ones(
    tmp_path: Path,
) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "if TYPE_CHECKING:\n"
        "    import numpy\n"
        "try:\n"
        "    import pytest\n"
        "except ImportError:\n"
        "    pytest = None\n"
        "def run():\n"
        "    import sniffio\n"
        "    return importlib.import_module('onnxruntime.capi')\n"
        "try:\n"
        "    import trio\n"
        "except ImportError as exc:\n"
        "    raise RuntimeError('pip install trio') from exc\n",
        encoding="utf-8",
    )
    uses: list[Use] = []
    _walk(ast.parse(source.read_text()), "aeval/ray/sample.py", uses)
    found = [(u.line, u.module) for u in uses]
    assert found == [(10, "sniffio"), (11, "onnxruntime"), (13, "trio")]
    problems = undeclared(uses)
    assert len(problems) == 3 and "'sniffio'" in problems[0] and "'ray' extra" in problems[0]


def test_the_license_is_an_spdx_expression_and_the_backend_reads_it() -> None:
    # setuptools deprecates the table form (``{ text = ... }``), no longer built after
    # 2027-02-18; the SPDX string needs setuptools 77, and a License classifier beside it is
    # an error there
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert not [c for c in project.get("classifiers", ()) if c.startswith("License ::")]
    requires = PYPROJECT["build-system"]["requires"]
    setuptools = [r for r in requires if requirement_name(r) == "setuptools"]
    assert len(setuptools) == 1, requires
    floor = re.fullmatch(r"setuptools\s*>=\s*(\d+)(\.\d+)*", setuptools[0].strip())
    assert floor is not None and int(floor[1]) >= 77, setuptools[0]
