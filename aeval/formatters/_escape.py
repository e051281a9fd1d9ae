"""Escaping shared by the text formats: Markdown that no value can break, HTML and XML that
hold any string, and the hash a page's Content-Security-Policy admits its inline code by."""

from __future__ import annotations

import re
from functools import cache

from .._util._jsonsafe import safe_text

__all__ = [
    "csp_hash",
    "html_forbidden",
    "html_suspect",
    "markdown_fenced",
    "markdown_inline",
    "markdown_row",
    "valid_html",
    "xml_message",
    "xml_text",
]

_PUNCTUATION = re.compile(r"([\\`*_\[\]#|~])")
_LEADING_MARKER = re.compile(r"^([-+=])|^(\d+)([.)])")
_BACKTICKS = re.compile(r"`+")
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_MESSAGE_LENGTH = 500


@cache
def html_suspect() -> re.Pattern[str]:
    """Characters HTML forbids (controls, noncharacters, surrogates), and every astral character:
    one class scans a long page several times faster than one listing the astral noncharacters.
    Compiled on first use (about 15 ms), by the HTML pages only."""
    return re.compile("[^\t\n\x0c\r\x20-\x7e\xa0-\ud7ff\ue000-\ufdcf\ufdf0-\ufffd]")


def markdown_inline(text: str, *, line_start: bool = False) -> str:
    """``text`` as one line of literal Markdown, safe in a heading, a list item or a table cell.

    Line breaks become spaces and the ends are stripped; ``&``, ``<`` and ``>`` become
    entities; ``\\ ` * _ [ ] # | ~`` are backslash-escaped.

    Args:
        text: The text.
        line_start: The text opens a block's content (a list item's), where a leading ``-``,
            ``+``, ``=`` or ordered-list marker (``1.``) is escaped too.
    """
    line = " ".join(text.splitlines()).strip()
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    line = _PUNCTUATION.sub(r"\\\1", line)
    if not line_start:
        return line
    return _LEADING_MARKER.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", line)


def markdown_row(*cells: str) -> str:
    """One row of a Markdown table: ``| a | b |`` (the cells already escaped)."""
    return "| " + " | ".join(cells) + " |"


def markdown_fenced(text: str) -> list[str]:
    """``text`` verbatim in a fenced code block that nothing inside it can close.

    The fence is a run of backticks longer than the longest run in ``text`` (at least three),
    as CommonMark requires for a closing fence.
    """
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence] if text else [fence, fence]


def html_forbidden(char: str) -> bool:
    """Whether ``char``, matched by :func:`html_suspect`, may not appear in an HTML page."""
    code = ord(char)
    return code <= 0xFFFF or code & 0xFFFE == 0xFFFE


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if not html_forbidden(char):
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def valid_html(page: str) -> str:
    """``page`` with the characters HTML forbids (and lone surrogates) written as escapes."""
    return html_suspect().sub(_escaped, safe_text(page))


def csp_hash(source: str) -> str:
    """The ``'sha256-...'`` source a Content-Security-Policy admits an inline script or style by."""
    import base64
    import hashlib

    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold written as ``\\xNN`` escapes."""
    return _XML_INVALID.sub(lambda match: f"\\x{ord(match.group(0)):02x}", text)


def xml_message(text: str) -> str:
    """``text`` on one line, cut at 500 characters (a JUnit ``message`` attribute)."""
    line = " ".join(text.split())
    return line if len(line) <= _MESSAGE_LENGTH else line[: _MESSAGE_LENGTH - 3] + "..."
