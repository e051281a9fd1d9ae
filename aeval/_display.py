"""How values (outputs, expected outputs) are shown in reports and assertion messages."""

from __future__ import annotations

from typing import Any

from ._util._jsonsafe import safe_str, safe_text

__all__ = ["display_value", "printable"]

_MAX_DEPTH = 50
_CONTROLS = {
    code: f"\\x{code:02x}"
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if code not in (0x09, 0x0A)
}


def printable(text: str) -> str:
    """``text`` with its control characters (C0, DEL and C1, but newline and tab) written as
    ``\\xNN`` escapes, and lone surrogates as ``\\udXXX``: safe to write to a terminal.

    An escape sequence in a model's answer (``\\x1b]8;;`` makes a link, ``\\x1b[2J`` clears
    the screen) is then shown, not obeyed.
    """
    return safe_text(text).translate(_CONTROLS)


def display_value(value: Any) -> str:
    """Render a value the way the upstream Java reports do; never raises.

    ``None`` is ``"null"`` and a list or tuple is ``"[a, b]"`` (Java's ``List.toString``:
    no quotes around strings, items rendered recursively; a list that contains itself shows
    ``[...]`` there). Anything else is ``str(value)``, or a description of the value when its
    ``__str__`` raises.
    """
    return _display(value, set(), 0)


def _display(value: Any, seen: set[int], depth: int) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        if id(value) in seen or depth >= _MAX_DEPTH:
            return "[...]"
        seen.add(id(value))
        try:
            return "[" + ", ".join(_display(item, seen, depth + 1) for item in value) + "]"
        finally:
            seen.discard(id(value))
    try:
        return safe_str(value)
    except RecursionError:
        return f"<{type(value).__name__} object>"
