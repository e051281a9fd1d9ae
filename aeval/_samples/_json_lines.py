"""Where the items of a JSON array of samples start: found only when an error needs them.

A valid ``.json`` file parses at orjson's speed; the line of each item is looked for with the
standard library's decoder the first time a message names one.
"""

from __future__ import annotations

import json

__all__ = ["JsonLines", "json_item_lines"]


class JsonLines:
    """Item lines of a JSON array, found only when an error needs them."""

    __slots__ = ("_data", "_lines")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._lines: list[int] | None = None

    def label(self, index: int) -> str:
        return f"item {index + 1}"

    def item(self, index: int) -> int | None:
        if self._lines is None:
            self._lines = json_item_lines(self._data)
        return self._lines[index] if index < len(self._lines) else None

    def key(self, index: int, key: str) -> int | None:
        return self.item(index)


def json_item_lines(data: bytes) -> list[int]:
    """The 1-based line on which each item of the JSON array ``data`` starts (as many as
    can be found before a syntax error)."""
    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    lines: list[int] = []
    position = _skip_space(text, 0)
    if position >= len(text) or text[position] != "[":
        return lines
    position = _skip_space(text, position + 1)
    try:
        while position < len(text) and text[position] != "]":
            lines.append(text.count("\n", 0, position) + 1)
            _, end = decoder.raw_decode(text, position)
            position = _skip_space(text, end)
            if position < len(text) and text[position] == ",":
                position = _skip_space(text, position + 1)
    except ValueError:
        pass
    return lines


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position
