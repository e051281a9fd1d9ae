"""The one registry of formatters, keyed by (subject, format), and the one extension map.

A *subject* is what is rendered: ``"report"`` (an :class:`~aeval.EvaluationReport`, the
default), ``"comparison"`` (a :class:`~aeval.Comparison`), ``"history"`` (the runs of one name
over time, ``aeval history``), ``"runs"`` (a list of stored runs, ``aeval runs``) or
``"suite"`` (the pytest plugin's suite report). Every formatter has the shape of
:class:`~aeval.abc.ReportFormatter`: a ``name``, an ``extension`` and a
``format(value, **options)`` method.

Third-party packages add formatters through the ``aeval.formatters`` entry-point group; each
entry point loads a formatter class (instantiated without arguments) or instance, for the
subject its optional ``subject`` attribute names (a report by default)::

    [project.entry-points."aeval.formatters"]
    junit = "my_package.junit:JUnitFormatter"

Entry points are loaded once, the first time the registry is used. The built-in formatters of
comparisons, histories, run lists and suites load their modules when they first render, so
that ``import aeval`` stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .._exceptions import FormatError
from .._util._plugins import PluginRegistry
from ._base import Formatter, ReportFormatter
from .html import HtmlFormatter
from .json import JsonFormatter
from .junit import JunitFormatter
from .markdown import MarkdownFormatter

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTENSION_ALIASES",
    "SUBJECTS",
    "BuiltinFormatter",
    "REGISTRY",
    "FormatChoices",
    "formatter_for_extension",
    "formatter_for_path",
    "formats_in_order",
    "get_formatter",
    "register_formatter",
    "render",
    "supported_formats",
    "unregister_formatter",
]

ENTRY_POINT_GROUP = "aeval.formatters"

SUBJECTS = ("report", "comparison", "history", "runs", "suite")
"""What a formatter renders; ``"report"`` is the default everywhere."""

EXTENSION_ALIASES = {".markdown": ".md", ".htm": ".html"}
"""Extensions read as another one when a file's format is inferred from its name."""

_NAME_ALIASES = {"md": "markdown", "xml": "junit"}


@dataclass(frozen=True, slots=True)
class BuiltinFormatter:
    """A built-in formatter whose module loads on first use.

    Attributes:
        name: The format's name.
        extension: The file extension, with the dot.
        target: ``"module:function"``, the module within :mod:`aeval.formatters`; the
            function takes the value and keyword-only options and returns the text.
        options: The option names the function accepts.
    """

    name: str
    extension: str
    target: str
    options: frozenset[str] = frozenset()

    def format(self, value: Any, **options: Any) -> str:
        """Render ``value``.

        Raises:
            FormatError: An option the format does not accept.
        """
        unknown = sorted(set(options) - self.options)
        if unknown:
            accepted = ", ".join(sorted(self.options)) or "none"
            raise FormatError(
                f"Unknown option {unknown[0]!r} for the {self.name} formatter; accepted "
                f"options: {accepted}"
            )
        module, _, function = self.target.partition(":")
        rendered: str = getattr(importlib.import_module(f"{__package__}.{module}"), function)(
            value, **options
        )
        return rendered


@dataclass(frozen=True, slots=True)
class _Slot:
    subject: str
    formatter: ReportFormatter

    @property
    def priority(self) -> Any:
        return getattr(self.formatter, "priority", 0)


_BUILTINS = (
    # subject, name, extension, "module:function", options
    ("comparison", "text", ".txt", "_comparison_terminal:text_of", "margin"),
    ("comparison", "markdown", ".md", "_comparison_markdown:render_markdown", "margin"),
    ("comparison", "json", ".json", "_comparison_json:render_json", "margin"),
    ("comparison", "html", ".html", "_comparison_html:render_html", "margin"),
    ("comparison", "junit", ".xml", "_comparison_junit:render_junit", "margin non_inferiority"),
    ("history", "json", ".json", "_history:history_json", ""),
    ("history", "markdown", ".md", "_history:history_markdown", ""),
    ("history", "html", ".html", "_history:history_html", ""),
    ("runs", "json", ".json", "_history:runs_json", ""),
    ("suite", "markdown", ".md", "_suite:suite_markdown", "generated"),
    ("suite", "json", ".json", "_suite:suite_json", "generated"),
)


def _builtins() -> list[_Slot]:
    report = (HtmlFormatter(), JsonFormatter(), JunitFormatter(), MarkdownFormatter())
    return [
        *(_Slot("report", formatter) for formatter in report),
        *(
            _Slot(
                subject,
                cast(ReportFormatter, BuiltinFormatter(name, ext, target, frozenset(o.split()))),
            )
            for subject, name, ext, target, o in _BUILTINS
        ),
    ]


def _subject(subject: object) -> str:
    if subject not in SUBJECTS:
        raise ValueError(f"unknown subject {subject!r}; the subjects: {', '.join(SUBJECTS)}")
    return str(subject)


def _check_formatter(formatter: object, origin: str, subject: str = "report") -> ReportFormatter:
    if not isinstance(formatter, ReportFormatter):
        raise TypeError(
            f"{origin} is not a {subject} formatter: it needs a 'name', an 'extension' and a "
            f"'format({subject}, **options)' method, got {formatter!r}"
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


def _slot_key(slot: _Slot) -> Hashable:
    return (slot.subject, _key(slot.formatter.name))


def _from_entry_point(entry_point: Any) -> _Slot:
    origin = (
        f"Report formatter entry point {entry_point.name!r} "
        f"({entry_point.value}, group {ENTRY_POINT_GROUP!r})"
    )
    try:
        target = entry_point.load()
        candidate = target() if isinstance(target, type) else target
        subject = _subject(getattr(candidate, "subject", "report"))
        return _Slot(subject, _check_formatter(candidate, origin, subject))
    except Exception as exc:
        raise FormatError(f"{origin} cannot be loaded: {type(exc).__name__}: {exc}") from exc


def _taken(current: _Slot, new: _Slot) -> FormatError:
    formatter = current.formatter
    return FormatError(
        f"A {current.subject} formatter named {formatter.name!r} is already registered "
        f"({type(formatter).__qualname__}); pass replace=True to replace it"
    )


def _default_registry() -> PluginRegistry[_Slot]:
    return PluginRegistry(
        group=ENTRY_POINT_GROUP,
        key=_slot_key,
        build=_from_entry_point,
        builtins=_builtins,
        duplicate=_taken,
        same=lambda a, b: type(a.formatter) is type(b.formatter),
    )


REGISTRY = _default_registry()


def _formatters(subject: str) -> list[ReportFormatter]:
    return [slot.formatter for slot in REGISTRY.plugins() if slot.subject == subject]


def _names(subject: str) -> tuple[str, ...]:
    return tuple(sorted((f.name for f in _formatters(subject)), key=str.lower))


def _unknown(name: str, subject: str) -> FormatError:
    if subject == "report":
        return FormatError(
            f"No report formatter found for format: {name}. "
            f"Available formats: {', '.join(_names(subject))}"
        )
    available = ", ".join(formats_in_order(subject))
    return FormatError(f"unknown {subject} format {name!r}; available: {available}")


def register_formatter(
    formatter: Formatter, *, replace: bool = False, subject: str | None = None
) -> ReportFormatter:
    """Make a formatter available by its name (to ``report.save``, ``report.format``,
    ``comparison.format``, ``aeval compare --format``, ``aeval history --format`` …).

    Args:
        formatter: The formatter instance.
        replace: Replace a formatter already registered under the same name and subject.
        subject: What it renders: ``"report"``, ``"comparison"``, ``"history"``, ``"runs"``
            or ``"suite"``; by default the formatter's ``subject`` attribute, else
            ``"report"``.

    Returns:
        The formatter, unchanged.

    Raises:
        FormatError: A formatter with that name (compared case-insensitively) exists for the
            subject and ``replace`` is false.
        TypeError: ``formatter`` lacks a name, an extension or a ``format`` method.
        ValueError: An unknown subject.
    """
    chosen = _subject(getattr(formatter, "subject", "report") if subject is None else subject)
    _check_formatter(formatter, "register_formatter() argument", chosen)
    registered = cast(ReportFormatter, formatter)
    REGISTRY.register(_Slot(chosen, registered), replace=replace)
    return registered


def unregister_formatter(name: str, *, subject: str = "report") -> ReportFormatter:
    """Remove the formatter of ``subject`` registered under ``name`` (case-insensitive) and
    return it.

    Raises:
        FormatError: No formatter has that name.
    """
    removed = REGISTRY.unregister((_subject(subject), _key(name)))
    if removed is None:
        raise _unknown(name, subject)
    return removed.formatter


def get_formatter(name: str, *, subject: str = "report") -> ReportFormatter:
    """The formatter of ``subject`` registered under ``name``, compared case-insensitively
    (``md`` and ``xml`` also name Markdown and JUnit when no formatter has those names).

    Raises:
        FormatError: ``name`` is blank, or no formatter has that name (the message lists
            the available formats).
    """
    key = _key(name)
    slot = REGISTRY.get((_subject(subject), key))
    if slot is None and key in _NAME_ALIASES and subject != "report":
        slot = REGISTRY.get((subject, _NAME_ALIASES[key]))
    if slot is None:
        raise _unknown(name, subject)
    return slot.formatter


def formats_in_order(subject: str) -> tuple[str, ...]:
    """The names of the formatters of ``subject`` in registration order (built-ins first)."""
    return tuple(f.name for f in _formatters(_subject(subject)))


class FormatChoices:
    """The names of ``subject``'s formats, read from the registry each time they are used
    (the ``choices`` of a command-line option), after the names in ``first``.

    Args:
        subject: What the formats render.
        first: Names offered before the registered ones (``"terminal"``, ``"table"``).
    """

    def __init__(self, subject: str, *first: str) -> None:
        self.subject = _subject(subject)
        self.first = first

    def __contains__(self, name: object) -> bool:
        return name in self.first or (
            isinstance(name, str) and name in formats_in_order(self.subject)
        )

    def __iter__(self) -> Iterator[str]:
        return iter((*self.first, *formats_in_order(self.subject)))


def supported_formats(subject: str = "report") -> tuple[str, ...]:
    """The names of every formatter registered for ``subject``, sorted."""
    return _names(_subject(subject))


def formatter_for_extension(extension: str, *, subject: str = "report") -> ReportFormatter | None:
    """The formatter of ``subject`` writing files with ``extension`` (e.g. ``".json"``, or an
    alias such as ``".markdown"``), if any."""
    wanted = extension.lower()
    wanted = EXTENSION_ALIASES.get(wanted, wanted)
    return next((f for f in _formatters(_subject(subject)) if f.extension.lower() == wanted), None)


def formatter_for_path(path: Path, *, subject: str = "report") -> ReportFormatter:
    """The formatter of ``subject`` a file's extension names.

    Raises:
        FormatError: The extension names none (the message lists the formats or
            extensions there are).
    """
    suffix = path.suffix.lower()
    found = formatter_for_extension(suffix, subject=subject) if suffix else None
    if found is not None:
        return found
    if subject == "report":
        raise FormatError(
            f"Cannot tell the report format of {str(path)!r} from its extension: pass "
            f"format= (one of {', '.join(supported_formats())})"
        )
    extensions = {f.extension.lower() for f in _formatters(subject)}
    extensions |= {alias for alias, target in EXTENSION_ALIASES.items() if target in extensions}
    raise FormatError(
        f"{path}: no {subject} format for the extension {path.suffix or '(none)'!r}; "
        f"use one of {', '.join(sorted(extensions))}, or name the format"
    )


def render(subject: str, format: str, value: Any, **options: Any) -> str:
    """``value`` rendered by the formatter of ``subject`` named ``format``, as text.

    A formatter that declares ``options`` receives only those of ``options`` it declares (a
    comparison's JUnit checks ``non_inferiority``, the others ignore it); one that declares
    none receives them all.

    Raises:
        FormatError: An unknown format, or an option the formatter refuses.
    """
    formatter = get_formatter(format, subject=subject)
    declared = getattr(formatter, "options", None)
    if declared is not None and subject != "report":
        options = {key: item for key, item in options.items() if key in declared}
    rendered = formatter.format(value, **options)
    return rendered if isinstance(rendered, str) else rendered.decode()
