"""The registry of report formatters: built-ins, explicit registrations and entry points.

Third-party packages add formatters through the ``aeval.formatters`` entry-point group; each
entry point loads a formatter class (instantiated without arguments) or instance::

    [project.entry-points."aeval.formatters"]
    junit = "my_package.junit:JUnitFormatter"

Entry points are loaded once, the first time the registry is used.
"""

from __future__ import annotations

from typing import Any

from .._exceptions import FormatError
from .._util._plugins import PluginRegistry
from ._base import ReportFormatter
from .html import HtmlFormatter
from .json import JsonFormatter
from .junit import JunitFormatter
from .markdown import MarkdownFormatter

__all__ = [
    "ENTRY_POINT_GROUP",
    "formatter_for_extension",
    "get_formatter",
    "register_formatter",
    "supported_formats",
    "unregister_formatter",
]

ENTRY_POINT_GROUP = "aeval.formatters"


def _check_formatter(formatter: object, origin: str) -> ReportFormatter:
    if not isinstance(formatter, ReportFormatter):
        raise TypeError(
            f"{origin} is not a report formatter: it needs a 'name', an 'extension' and a "
            f"'format(report, **options)' method, got {formatter!r}"
        )
    name = formatter.name
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"{origin}: the formatter's name must be a non-blank string, got {name!r}")
    extension = formatter.extension
    if not isinstance(extension, str) or not extension.startswith(".") or len(extension) < 2:
        raise TypeError(
            f"{origin}: the formatter's extension must start with a dot (like '.md'), "
            f"got {extension!r}"
        )
    return formatter


def _key(name: object) -> str:
    if name is None or not isinstance(name, str) or not name.strip():
        raise FormatError("Format must not be null or blank")
    return name.strip().lower()


def _from_entry_point(entry_point: Any) -> ReportFormatter:
    origin = (
        f"Report formatter entry point {entry_point.name!r} "
        f"({entry_point.value}, group {ENTRY_POINT_GROUP!r})"
    )
    try:
        target = entry_point.load()
        candidate = target() if isinstance(target, type) else target
        return _check_formatter(candidate, origin)
    except Exception as exc:
        raise FormatError(f"{origin} cannot be loaded: {type(exc).__name__}: {exc}") from exc


def _taken(current: ReportFormatter, new: ReportFormatter) -> FormatError:
    return FormatError(
        f"A report formatter named {current.name!r} is already registered "
        f"({type(current).__qualname__}); pass replace=True to replace it"
    )


def _default_registry() -> PluginRegistry[ReportFormatter]:
    return PluginRegistry(
        group=ENTRY_POINT_GROUP,
        key=lambda formatter: _key(formatter.name),
        build=_from_entry_point,
        builtins=lambda: [HtmlFormatter(), JsonFormatter(), JunitFormatter(), MarkdownFormatter()],
        duplicate=_taken,
    )


_REGISTRY = _default_registry()


def _names() -> tuple[str, ...]:
    return tuple(sorted((f.name for f in _REGISTRY.plugins()), key=str.lower))


def _unknown(name: str) -> FormatError:
    return FormatError(
        f"No report formatter found for format: {name}. Available formats: {', '.join(_names())}"
    )


def register_formatter(formatter: ReportFormatter, *, replace: bool = False) -> ReportFormatter:
    """Make a formatter available by its name (to ``report.save``, ``report.format``, …).

    Args:
        formatter: The formatter instance.
        replace: Replace a formatter already registered under the same name.

    Returns:
        The formatter, unchanged.

    Raises:
        FormatError: A formatter with that name (compared case-insensitively) exists and
            ``replace`` is false.
        TypeError: ``formatter`` lacks a name, an extension or a ``format`` method.
    """
    _check_formatter(formatter, "register_formatter() argument")
    return _REGISTRY.register(formatter, replace=replace)


def unregister_formatter(name: str) -> ReportFormatter:
    """Remove the formatter registered under ``name`` (case-insensitive) and return it.

    Raises:
        FormatError: No formatter has that name.
    """
    removed = _REGISTRY.unregister(_key(name))
    if removed is None:
        raise _unknown(name)
    return removed


def get_formatter(name: str) -> ReportFormatter:
    """The formatter registered under ``name``, compared case-insensitively.

    Raises:
        FormatError: ``name`` is blank, or no formatter has that name (the message lists
            the available formats).
    """
    formatter = _REGISTRY.get(_key(name))
    if formatter is None:
        raise _unknown(name)
    return formatter


def supported_formats() -> tuple[str, ...]:
    """The names of every registered formatter, sorted."""
    return _names()


def formatter_for_extension(extension: str) -> ReportFormatter | None:
    """The formatter writing files with ``extension`` (e.g. ``".json"``), if any."""
    wanted = extension.lower()
    return next((f for f in _REGISTRY.plugins() if f.extension.lower() == wanted), None)
