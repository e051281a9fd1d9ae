"""Every rendering of every subject: reports (Markdown, JSON, JUnit XML and HTML built in),
comparisons, histories, run lists, suite reports and the terminal's tables; more formats
through the ``aeval.formatters`` entry points or :func:`register_formatter`, one registry
keyed by (subject, format)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import lazy_package as _lazy_package
from ._base import check_options
from ._registry import (
    get_formatter,
    register_formatter,
    supported_formats,
    unregister_formatter,
)

if TYPE_CHECKING:
    from ..abc import ReportFormatter as ReportFormatter
    from ._registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from ._save import save_report as save_report, save_report_as as save_report_as
    from .html import HtmlFormatter as HtmlFormatter
    from .json import JsonFormatter as JsonFormatter
    from .markdown import MarkdownFormatter as MarkdownFormatter

_BUILT_IN = "use get_formatter({0!r}), or import it from aeval.formatters.{0}, where it lives"
_SAVE = "use report.{0}(...), the same call (EvaluationReport.{0})"

_DEPRECATED: dict[str, tuple[str, str]] = {
    "ReportFormatter": ("..abc", "import it from aeval.abc, where every contract lives"),
    "ENTRY_POINT_GROUP": (
        "._registry",
        "it is aeval's own machinery; the group is the string 'aeval.formatters'",
    ),
    "save_report": ("._save", _SAVE.format("save")),
    "save_report_as": ("._save", _SAVE.format("save_as")),
    "HtmlFormatter": (".html", _BUILT_IN.format("html")),
    "JsonFormatter": (".json", _BUILT_IN.format("json")),
    "MarkdownFormatter": (".markdown", _BUILT_IN.format("markdown")),
}

__all__ = [
    "check_options",
    "get_formatter",
    "register_formatter",
    "supported_formats",
    "unregister_formatter",
]

__getattr__, __dir__ = _lazy_package(globals(), {}, deprecated=_DEPRECATED)
