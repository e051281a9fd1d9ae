"""Every rendering of every subject: reports (Markdown, JSON, JUnit XML and HTML built in),
comparisons, histories, run lists, suite reports and the terminal's tables; more formats
through the ``aeval.formatters`` entry points or :func:`register_formatter`, one registry
keyed by (subject, format)."""

from __future__ import annotations

from ._base import ReportFormatter, check_options
from ._registry import (
    ENTRY_POINT_GROUP,
    get_formatter,
    register_formatter,
    supported_formats,
    unregister_formatter,
)
from ._save import save_report, save_report_as
from .html import HtmlFormatter
from .json import JsonFormatter
from .markdown import MarkdownFormatter

__all__ = [
    "ENTRY_POINT_GROUP",
    "HtmlFormatter",
    "JsonFormatter",
    "MarkdownFormatter",
    "ReportFormatter",
    "check_options",
    "get_formatter",
    "register_formatter",
    "save_report",
    "save_report_as",
    "supported_formats",
    "unregister_formatter",
]
