"""Nothing in the package depends on one interpreter's internals (issue 33): no code built
with ``exec`` or ``eval``, no decision taken on ``sys.getrefcount``, no ``__class__`` swap.

``aeval/trace`` is left out until its own fold (it still gives a snapshot its class).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "aeval"
LEFT_OUT = ("trace",)


def _modules() -> list[Path]:
    return sorted(
        path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] not in LEFT_OUT
    )


def _tricks(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("exec", "eval")
        ):
            found.append((node.lineno, f"{node.func.id}()"))
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name == "getrefcount":
                found.append((node.lineno, "getrefcount"))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "__class__":
                    found.append((node.lineno, "__class__ assignment"))
        if isinstance(node, ast.ImportFrom) and any(a.name == "getrefcount" for a in node.names):
            found.append((node.lineno, "getrefcount"))
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_depends_on_one_interpreter(path: Path) -> None:
    tricks = _tricks(ast.parse(path.read_text(encoding="utf-8")))
    assert not tricks, f"{path.relative_to(PACKAGE)}: {tricks}"
