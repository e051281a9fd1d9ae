"""How values (outputs, expected outputs) are shown in reports and assertion messages."""

from __future__ import annotations

from typing import Any

__all__ = ["display_value"]


def display_value(value: Any) -> str:
    """Render a value the way the upstream Java reports do.

    ``None`` is ``"null"`` and a list or tuple is ``"[a, b]"`` (Java's ``List.toString``:
    no quotes around strings, items rendered recursively). Anything else is ``str(value)``.
    """
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "[" + ", ".join(display_value(item) for item in value) + "]"
    return str(value)
