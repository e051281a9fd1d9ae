"""Sample files are UTF-8: decoding them, and the error that locates a byte that is not."""

from __future__ import annotations

from .._exceptions import SampleLoadError

__all__ = ["BOM", "decode_utf8", "invalid_utf8_at", "not_utf8"]

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark, which a file may start with."""


def invalid_utf8_at(data: bytes) -> int | None:
    """Where the first byte of ``data`` that is not UTF-8 is, ``None`` when all are."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def not_utf8(
    data: bytes, position: int, source: str, *, first_line: int = 1, offset: int = 0
) -> SampleLoadError:
    """The error for the byte at ``position`` of ``data``, which is not UTF-8.

    ``data`` may be a part of the file: its first line is ``first_line`` of the file and its
    first byte is at ``offset``.
    """
    line_start = data.rfind(b"\n", 0, position) + 1
    if line_start == 0 and offset == 0 and data.startswith(BOM):
        line_start = len(BOM)
    column = len(data[line_start:position].decode("utf-8")) + 1
    return SampleLoadError(
        f"the file is not UTF-8 text (invalid byte 0x{data[position]:02X} at column {column}, "
        f"byte offset {offset + position}): save it as UTF-8",
        source=source,
        line=first_line + data.count(b"\n", 0, position),
    )


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as text, without a leading BOM; a :class:`~aeval.SampleLoadError` naming the
    line and column of the first byte that is not UTF-8."""
    text = data.removeprefix(BOM)
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, len(data) - len(text) + exc.start, source) from exc
