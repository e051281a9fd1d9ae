"""Rendering a comparison by format name, and the format a file's extension names."""

from __future__ import annotations

from pathlib import Path

from .._exceptions import FormatError
from ._comparison import Comparison

__all__ = ["FORMATS", "EXTENSIONS", "format_for_path", "render"]

FORMATS = ("text", "markdown", "json", "html", "junit")
"""The formats of a comparison: ``text`` is the terminal's tables without colours."""

EXTENSIONS = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
    ".xml": "junit",
}


def format_for_path(path: Path) -> str:
    """The format a file's extension names.

    Raises:
        FormatError: The extension names none.
    """
    found = EXTENSIONS.get(path.suffix.lower())
    if found is None:
        known = ", ".join(sorted(EXTENSIONS))
        raise FormatError(
            f"{path}: no comparison format for the extension {path.suffix or '(none)'!r}; "
            f"use one of {known}, or name the format"
        )
    return found


def render(
    comparison: Comparison,
    format: str,
    *,
    margin: float = 0.0,
    non_inferiority: float | None = None,
) -> str:
    """Render ``comparison`` as ``format`` (one of :data:`FORMATS`).

    Args:
        comparison: The comparison.
        format: The format's name.
        margin: The points a significant regression must exceed to be flagged.
        non_inferiority: The non-inferiority margin, for the JUnit case that checks it.

    Raises:
        FormatError: An unknown format.
    """
    name = format.lower()
    if name == "md":
        name = "markdown"
    if name == "text":
        from ._terminal import text_of

        return text_of(comparison, margin=margin)
    if name == "markdown":
        from ._markdown import render_markdown

        return render_markdown(comparison, margin=margin)
    if name == "json":
        from ._json import render_json

        return render_json(comparison, margin=margin)
    if name == "html":
        from ._html import render_html

        return render_html(comparison, margin=margin)
    if name in ("junit", "xml"):
        from ._junit import render_junit

        return render_junit(comparison, margin=margin, non_inferiority=non_inferiority)
    raise FormatError(f"unknown comparison format {format!r}; available: {', '.join(FORMATS)}")
