"""Nothing in the package depends on one interpreter's internals (issue 33), read from the
source with ``ast``:

- no ``exec``, ``eval`` or built-in ``compile`` (code built from strings);
- no ``sys.getrefcount`` (reference counts are CPython's, and change between versions);
- no assignment to an object's ``__class__``;
- no ``setattr`` on a class at module level (a class patched at import);
- in ``aeval.trace``, no private attribute of another object (another library's, such as
  httpx's responses and streams, or another module's, such as the recorder's events) is
  read or written: only ``self``'s and ``cls``'s, and the few named below, each of its own
  module's class.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "aeval"

KNOWN_TRICKS: set[str] = set()
"""Files still allowed a trick (none since issue 33). This list only shrinks: a file on it
without a trick fails the test too, until it is taken off."""

OWN_PRIVATES = {
    ("trace/_context.py", "other._made_events"),
    ("trace/_context.py", "other._lock"),
    ("trace/_fixtures.py", "replay._traces"),
    ("trace/_values.py", "trace._make"),
}
"""Private attributes ``aeval.trace`` reads on an object of the class its module defines
(``Recorder.absorb`` reads the other recorder's, ``Replay.from_traces`` its new replay's,
``Trace``'s fields their trace's)."""


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """The nodes of ``tree`` outside any function or class body."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _tricks(tree: ast.Module) -> list[str]:
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func
            if isinstance(called, ast.Name) and called.id in {"exec", "eval", "compile"}:
                found.append(f"line {node.lineno}: {called.id}()")
            name = called.attr if isinstance(called, ast.Attribute) else None
            if isinstance(called, ast.Name):
                name = called.id
            if name == "getrefcount":
                found.append(f"line {node.lineno}: getrefcount()")
        if isinstance(node, ast.ImportFrom) and any(
            alias.name == "getrefcount" for alias in node.names
        ):
            found.append(f"line {node.lineno}: imports getrefcount")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "__class__":
                found.append(f"line {target.lineno}: assigns __class__")
    for node in _module_level(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and (node.args[0].id in classes or node.args[0].id[:1].isupper())
        ):
            found.append(f"line {node.lineno}: setattr({node.args[0].id}, ...) at import")
    return found


def test_no_module_depends_on_one_interpreter_s_internals() -> None:
    tricks = {name: found for name, tree in _sources() if (found := _tricks(tree))}
    unexpected = {name: found for name, found in tricks.items() if name not in KNOWN_TRICKS}
    assert unexpected == {}, "interpreter tricks (see this test's docstring for why not)"
    cleaned = KNOWN_TRICKS - set(tricks)
    assert cleaned == set(), f"take these off KNOWN_TRICKS, they are clean now: {cleaned}"


def test_the_checks_see_each_trick() -> None:
    source = (
        "import sys\n"
        "from sys import getrefcount\n"
        "class A:\n"
        "    pass\n"
        "exec('x = 1')\n"
        "eval('1')\n"
        "code = compile('1', '<s>', 'eval')\n"
        "sys.getrefcount(A)\n"
        "a = A()\n"
        "a.__class__ = A\n"
        "setattr(A, 'b', 1)\n"
        "def fine(obj):\n"
        "    setattr(obj, 'b', 1)\n"
    )
    found = _tricks(ast.parse(source))
    assert sorted(found, key=lambda entry: int(entry.split()[1].rstrip(":"))) == [
        "line 2: imports getrefcount",
        "line 5: exec()",
        "line 6: eval()",
        "line 7: compile()",
        "line 8: getrefcount()",
        "line 10: assigns __class__",
        "line 11: setattr(A, ...) at import",
    ]


def _private_reads(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
        ):
            found.append(ast.unparse(node))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append(ast.unparse(node))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_trace_package_reads_no_other_object_s_private_attributes() -> None:
    found = {
        (name, read)
        for name, tree in _sources()
        if name.startswith("trace/")
        for read in _private_reads(tree)
    }
    assert found - OWN_PRIVATES == set()
    assert OWN_PRIVATES - found == set(), "take these off OWN_PRIVATES: no longer read"
