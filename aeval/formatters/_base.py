"""The report formatter protocol and the option checking shared by formatters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._exceptions import FormatError
from ..abc import ReportFormatter

if TYPE_CHECKING:
    pass

__all__ = ["ReportFormatter", "check_options"]


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
