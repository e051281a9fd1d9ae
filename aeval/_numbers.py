"""Number formatting shared by the report, the formatters and the assertions."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

__all__ = ["format_number", "format_percent", "truncate"]

_CENT = Decimal("0.01")


def format_number(value: float) -> str:
    """Two decimals, rounding half up on the shortest representation (Java's ``%.2f``).

    ``format(2.675, ".2f")`` gives ``2.67`` because of binary floating point; users read
    ``2.675`` and expect ``2.68``, as the upstream Java reports print.
    """
    return str(Decimal(repr(float(value))).quantize(_CENT, rounding=ROUND_HALF_UP))


def format_percent(value: float) -> str:
    """``85.0`` → ``"85.00%"``."""
    return f"{format_number(value)}%"


def truncate(text: str, limit: int) -> str:
    """Keep the first ``limit - 3`` characters and append ``...`` when ``text`` is longer."""
    if len(text) <= limit:
        return text
    return text[: limit - 3] + "..."
