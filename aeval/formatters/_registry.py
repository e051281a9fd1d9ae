"""The registry of report formatters: built-ins, explicit registrations and entry points.

Third-party packages add formatters through the ``aeval.formatters`` entry-point group; each
entry point loads a formatter class (instantiated without arguments) or instance::

    [project.entry-points."aeval.formatters"]
    junit = "my_package.junit:JUnitFormatter"

Entry points are loaded once, the first time the registry is used.
"""

from __future__ import annotations

import threading
from importlib import metadata

from .._exceptions import FormatError
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


class _Registry:
    __slots__ = ("_entry_points_loaded", "_formatters", "_lock")

    def __init__(self, *formatters: ReportFormatter) -> None:
        self._formatters: dict[str, ReportFormatter] = {}
        self._entry_points_loaded = False
        self._lock = threading.RLock()
        for formatter in formatters:
            self._add(formatter, replace=False)

    def _add(self, formatter: ReportFormatter, *, replace: bool) -> None:
        key = formatter.name.strip().lower()
        current = self._formatters.get(key)
        if current is not None and not replace:
            raise FormatError(
                f"A report formatter named {current.name!r} is already registered "
                f"({type(current).__qualname__}); pass replace=True to replace it"
            )
        self._formatters[key] = formatter

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        with self._lock:
            if self._entry_points_loaded:
                return
            loaded: list[ReportFormatter] = []
            for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
                origin = (
                    f"Report formatter entry point {entry_point.name!r} "
                    f"({entry_point.value}, group {ENTRY_POINT_GROUP!r})"
                )
                try:
                    target = entry_point.load()
                    candidate = target() if isinstance(target, type) else target
                    loaded.append(_check_formatter(candidate, origin))
                except Exception as exc:
                    raise FormatError(
                        f"{origin} cannot be loaded: {type(exc).__name__}: {exc}"
                    ) from exc
            for formatter in loaded:
                current = self._formatters.get(formatter.name.strip().lower())
                if current is not None and type(current) is type(formatter):
                    continue
                self._add(formatter, replace=False)
            self._entry_points_loaded = True

    def register(self, formatter: ReportFormatter, *, replace: bool) -> ReportFormatter:
        _check_formatter(formatter, "register_formatter() argument")
        self._load_entry_points()
        with self._lock:
            self._add(formatter, replace=replace)
        return formatter

    def unregister(self, name: str) -> ReportFormatter:
        self._load_entry_points()
        with self._lock:
            key = self._key(name)
            try:
                return self._formatters.pop(key)
            except KeyError:
                raise self._unknown(name) from None

    def get(self, name: str) -> ReportFormatter:
        self._load_entry_points()
        formatter = self._formatters.get(self._key(name))
        if formatter is None:
            raise self._unknown(name)
        return formatter

    def names(self) -> tuple[str, ...]:
        self._load_entry_points()
        return tuple(sorted((f.name for f in self._formatters.values()), key=str.lower))

    def by_extension(self, extension: str) -> ReportFormatter | None:
        self._load_entry_points()
        wanted = extension.lower()
        for formatter in self._formatters.values():
            if formatter.extension.lower() == wanted:
                return formatter
        return None

    @staticmethod
    def _key(name: object) -> str:
        if name is None or not isinstance(name, str) or not name.strip():
            raise FormatError("Format must not be null or blank")
        return name.strip().lower()

    def _unknown(self, name: str) -> FormatError:
        return FormatError(
            f"No report formatter found for format: {name}. "
            f"Available formats: {', '.join(self.names())}"
        )


def _default_registry() -> _Registry:
    return _Registry(HtmlFormatter(), JsonFormatter(), JunitFormatter(), MarkdownFormatter())


_REGISTRY = _default_registry()


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
    return _REGISTRY.register(formatter, replace=replace)


def unregister_formatter(name: str) -> ReportFormatter:
    """Remove the formatter registered under ``name`` (case-insensitive) and return it.

    Raises:
        FormatError: No formatter has that name.
    """
    return _REGISTRY.unregister(name)


def get_formatter(name: str) -> ReportFormatter:
    """The formatter registered under ``name``, compared case-insensitively.

    Raises:
        FormatError: ``name`` is blank, or no formatter has that name (the message lists
            the available formats).
    """
    return _REGISTRY.get(name)


def supported_formats() -> tuple[str, ...]:
    """The names of every registered formatter, sorted."""
    return _REGISTRY.names()


def formatter_for_extension(extension: str) -> ReportFormatter | None:
    """The formatter writing files with ``extension`` (e.g. ``".json"``), if any."""
    return _REGISTRY.by_extension(extension)
