"""The documentation's Python snippets compile, and every aeval name they import exists."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def snippets() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for number, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8")), 1):
            found.append((f"{page.relative_to(ROOT)}#{number}", match.group(1)))
    return found


SNIPPETS = snippets()


def test_the_docs_have_python_snippets() -> None:
    assert len(SNIPPETS) >= 20


@pytest.mark.parametrize(("where", "code"), SNIPPETS, ids=[where for where, _ in SNIPPETS])
def test_snippet_compiles_and_its_aeval_imports_exist(where: str, code: str) -> None:
    tree = compile(code, where, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aeval"):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                assert _importable_from(module, alias.name), (
                    f"{where}: {node.module} has no {alias.name}"
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("aeval"):
                    importlib.import_module(alias.name)


def _importable_from(module: ModuleType, name: str) -> bool:
    """Whether ``from module import name`` works: an attribute, or a submodule of a package
    (which is an attribute only once something imported it)."""
    if hasattr(module, name):
        return True
    return (
        hasattr(module, "__path__")
        and importlib.util.find_spec(f"{module.__name__}.{name}") is not None
    )
