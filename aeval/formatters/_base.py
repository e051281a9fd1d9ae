"""The report formatter protocol and the option checking shared by formatters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._exceptions import FormatError

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport

__all__ = ["ReportFormatter", "check_options"]


@runtime_checkable
class ReportFormatter(Protocol):
    """Renders an :class:`~aeval.EvaluationReport` in one format.

    A formatter may also declare ``options``, the collection of option names it accepts:
    :func:`~aeval.formatters.save_report` then hands each formatter only its own options, so
    ``report.save(dir, include_details=False)`` works although the JSON formatter does not
    know ``include_details``. A formatter without ``options`` receives every option.

    Example:
        >>> class CsvFormatter:
        ...     name = "csv"
        ...     extension = ".csv"
        ...     options = frozenset()
        ...
        ...     def format(self, report, **options):
        ...         check_options(self.name, options, {})
        ...         return "".join(f"{r.name},{r.outcome}\\n" for r in report.evaluations)
    """

    @property
    def name(self) -> str:
        """The format's name, e.g. ``"markdown"`` (looked up case-insensitively)."""
        ...

    @property
    def extension(self) -> str:
        """The file extension, with the dot, e.g. ``".md"``."""
        ...

    def format(self, report: EvaluationReport, **options: Any) -> str | bytes:
        """Render ``report``.

        Raises:
            FormatError: An option is unknown to this formatter or has the wrong type.
        """
        ...


def check_options(
    formatter: str, options: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """Validate ``options`` against ``defaults`` and return them with the defaults filled in.

    A value must have the type of its default (``bool`` for a ``True`` default).

    Args:
        formatter: The formatter's name, for the messages.
        options: What the caller passed.
        defaults: Every accepted option and its default value.

    Raises:
        FormatError: An option is unknown or has the wrong type.
    """
    resolved = dict(defaults)
    for key, value in options.items():
        if key not in defaults:
            accepted = ", ".join(sorted(defaults)) or "none"
            raise FormatError(
                f"Unknown option {key!r} for the {formatter} report formatter; "
                f"accepted options: {accepted}"
            )
        expected = type(defaults[key])
        if not isinstance(value, expected):
            raise FormatError(
                f"Option {key!r} of the {formatter} report formatter must be a "
                f"{expected.__name__}, got {value!r}"
            )
        resolved[key] = value
    return resolved
