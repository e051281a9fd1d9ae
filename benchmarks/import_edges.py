"""Count the import edges between aeval's top-level units (standard library only).

A unit is a direct child of ``aeval/``: a folder (``aeval/_engine/``, ``aeval/formatters/``)
counts as one unit, a module (``aeval/_exceptions.py``) as another. An edge is an ordered pair
of different units where some module of the first imports some module of the second; imports
under ``if TYPE_CHECKING:`` and inside functions count too (they are dependencies a reader has
to follow). ``aeval/__init__.py`` is left out: it re-exports every public name on purpose.

Usage::

    python benchmarks/import_edges.py            # units, edges and cycles
    python benchmarks/import_edges.py --edges    # every edge, one a line
    python benchmarks/import_edges.py --runtime  # leave out imports under TYPE_CHECKING
    python benchmarks/import_edges.py --package /tmp/old/aeval   # another checkout
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "aeval"


def unit_of(module: str) -> str:
    """The top-level unit of a dotted module name inside aeval."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, *, runtime: bool) -> list[ast.AST]:
    found: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if runtime and _is_type_checking(child):
                stack.extend(child.orelse)  # type: ignore[attr-defined]
                continue
            stack.append(child)
    return found


def _targets(module: str, tree: ast.AST, *, is_package: bool, runtime: bool) -> set[str]:
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _nodes(tree, runtime=runtime):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "aeval":
                found.update(f"aeval.{alias.name}" for alias in node.names)
            elif base.startswith("aeval."):
                found.add(base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("aeval."))
    return found


def edges(package: Path = PACKAGE, *, runtime: bool = False) -> set[tuple[str, str]]:
    """Every (importer unit, imported unit) pair, the two different."""
    units = {p.stem if p.is_file() else p.name for p in package.iterdir()}
    found: set[tuple[str, str]] = set()
    for path in sorted(package.rglob("*.py")):
        if path == package / "__init__.py":
            continue
        module = module_name(path, package)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        for target in _targets(module, tree, is_package=is_package, runtime=runtime):
            a, b = unit_of(module), unit_of(target)
            if a != b and b in units:
                found.add((a, b))
    return found


def cycles(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs of units that import each other."""
    return sorted((a, b) for a, b in pairs if a < b and (b, a) in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print every edge")
    parser.add_argument(
        "--runtime", action="store_true", help="leave out imports under TYPE_CHECKING"
    )
    parser.add_argument("--package", type=Path, default=PACKAGE, help="the aeval/ folder")
    args = parser.parse_args(argv)
    pairs = edges(args.package.resolve(), runtime=args.runtime)
    units = {unit for pair in pairs for unit in pair}
    if args.edges:
        for a, b in sorted(pairs):
            print(f"{a} -> {b}")
    print(f"units: {len(units)}")
    print(f"edges: {len(pairs)}")
    print(f"units importing each other: {len(cycles(pairs))}")
    for a, b in cycles(pairs):
        print(f"  {a} <-> {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
