"""The formatter shape of every subject and the option checking shared by formatters.

The :class:`ReportFormatter` contract lives in :mod:`aeval.abc`; it is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .._exceptions import FormatError
from ..abc import ReportFormatter

__all__ = ["Formatter", "ReportFormatter", "check_options"]


class Formatter(Protocol):
    """Renders a value of one subject (a report, a comparison, a history, a list of runs or a
    suite report) in one format: :class:`ReportFormatter`'s shape for any subject."""

    @property
    def name(self) -> str:
        """The format's name, e.g. ``"markdown"`` (looked up case-insensitively)."""
        ...

    @property
    def extension(self) -> str:
        """The file extension, with the dot, e.g. ``".md"``."""
        ...

    @property
    def format(self) -> Callable[..., str | bytes]:
        """Renders a value (its first argument) with keyword options."""
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
