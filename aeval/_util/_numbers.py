"""Numbers shared by the report, the formatters and the assertions: their formatting, and
the one check of a fraction (a score, a rate, a threshold) that the constructors share."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__ = [
    "check_fraction",
    "describe_score",
    "format_interval",
    "format_number",
    "format_percent",
    "truncate",
]

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


def format_interval(interval: tuple[float, float]) -> str:
    """An interval by its ends, ``65.24–89.50``, whatever its shape.

    Wilson's intervals are asymmetric about the score but at 50 %: one form for all keeps
    a column of intervals readable, where ``± 40.55`` beside ``9.68–70.00`` would not.
    """
    low, high = interval
    return f"{format_number(low)}–{format_number(high)}"


def describe_score(
    score: float, interval: tuple[float, float], samples: int, *, confidence: float = 0.95
) -> str:
    """A score with its uncertainty in one line: ``80.00% (95% CI 65.24–89.50, 40 samples)``."""
    level = f"{confidence * 100:g}% CI"
    unit = "sample" if samples == 1 else "samples"
    return f"{format_percent(score)} ({level} {format_interval(interval)}, {samples} {unit})"


def check_fraction(
    value: object, what: str, *, bounds: str = "0 and 1", got: str = "got {!r}"
) -> float:
    """``value`` as a float from 0 to 1: a bool, any other type and NaN are refused.

    Args:
        value: The number to check.
        what: Its name in the messages (``"Score"``, ``"review_rate"``).
        bounds: The range as the messages write it (``"0 and 1"``, ``"0.0 and 1.0"``).
        got: How the message of a number out of range shows it: a format string of one field.

    Raises:
        TypeError: ``value`` is not an int or a float.
        ValueError: ``value`` is NaN, below 0 or above 1.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number between {bounds}, got {value!r}")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValueError(f"{what} must be between {bounds}, {got.format(value)}")
    return number
