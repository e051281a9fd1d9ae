"""Helpers shared by the text strategies: option checks and how values are shown."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .._util._numbers import truncate

__all__ = [
    "JSON_TYPES",
    "check_choice",
    "check_flag",
    "check_texts",
    "expected_texts",
    "fenced",
    "is_sequence",
    "plural",
    "sentence",
    "show_value",
    "show_values",
]

_SHOWN = 120
_FENCE_HEADER = re.compile(r"[\w+.-]*[ \t]*\r?")
JSON_TYPES: tuple[tuple[type, str], ...] = (
    (dict, "object"),
    (list, "array"),
    (str, "string"),
    (bool, "boolean"),
    (int, "number"),
    (float, "number"),
)


def fenced(text: str) -> str | None:
    """The body of ``text`` when all of it is one fenced code block, else ``None``.

    Linear in the text: a pattern with a lazy body before the closing fence rescanned each
    run of blanks in the body once per character of it.
    """
    body = text.strip()
    newline = body.find("\n")
    if (
        not body.startswith("```")
        or not body.endswith("```")
        or newline == -1
        or newline + 1 > len(body) - 3
        or not _FENCE_HEADER.fullmatch(body, 3, newline)
    ):
        return None
    inner = body[newline + 1 : len(body) - 3]
    end = len(inner.rstrip(" \t"))
    if inner.endswith("\n", 0, end):
        end -= 1
    if inner.endswith("\r", 0, end):
        end -= 1
    return inner[:end]


def show_value(value: Any) -> str:
    return truncate(repr(value), _SHOWN)


def show_values(values: Iterable[Any]) -> str:
    return ", ".join(show_value(value) for value in values)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def sentence(parts: list[str]) -> str:
    text = "; ".join(parts)
    return text[:1].upper() + text[1:]


def check_flag(value: object, option: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{option} must be True or False, got {value!r}")
    return value


def check_choice(value: object, option: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        choices = " or ".join(repr(choice) for choice in allowed)
        raise ValueError(f"{option} must be {choices}, got {value!r}")
    return str(value)


def check_texts(value: str | Iterable[str], option: str) -> tuple[str, ...]:
    """A single string or an iterable of non-empty strings, as a tuple."""
    items: tuple[Any, ...]
    if isinstance(value, str):
        items = (value,)
    elif isinstance(value, Iterable) and not isinstance(value, bytes | Mapping):
        items = tuple(value)
    else:
        raise TypeError(f"{option} must be a string or a list of strings, got {value!r}")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{option} must hold strings, got {item!r}")
        if not item:
            raise ValueError(f"{option} must not hold an empty string: it is found in any text")
    return items


def expected_texts(expected: Any) -> tuple[str, ...] | None:
    """The sample's expected output as texts: a string, or each item of a list."""
    if expected is None:
        return None
    if isinstance(expected, list | tuple):
        return tuple(item if isinstance(item, str) else str(item) for item in expected)
    return (expected if isinstance(expected, str) else str(expected),)


def is_sequence(value: Any) -> bool:
    return isinstance(value, list | tuple)
