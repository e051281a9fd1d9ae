"""Writing any value as JSON: lossless where JSON can hold it, a safe stand-in otherwise.

A function under test may return anything: a string cut inside an emoji (a lone surrogate),
a dict with tuple keys, an integer beyond 64 bits, a list that contains itself, an object
whose ``__str__`` raises. None of these may crash a run or lose a row. :func:`dumps` tries
orjson first (the fast path for every ordinary value) and, only when that fails, rebuilds the
value from JSON-native parts, noting each change so the row can say what was altered.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Set
from decimal import Decimal
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "dumps",
    "int_text",
    "json_default",
    "jsonable",
    "read_count",
    "read_list",
    "read_mapping",
    "read_number",
    "read_text",
    "safe_str",
    "safe_text",
]

MAX_DEPTH = 200
"""Nesting beyond this depth is written as text (orjson refuses deeper documents)."""

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_OPTIONS = orjson.OPT_NON_STR_KEYS


def safe_text(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` escapes, so it encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def json_default(value: Any) -> Any:
    """orjson's ``default``: a mapping as a dict, a set as a list, a Decimal as a float, any
    other value as its text."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Set):
        return list(value)
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def dumps(value: Any, *, option: int = 0) -> tuple[bytes, tuple[str, ...]]:
    """Serialise ``value`` as JSON; never raises.

    Returns:
        The bytes, and notes describing each part that had to be written as a stand-in
        (empty when the value was written as it is).
    """
    try:
        return orjson.dumps(value, default=json_default, option=_OPTIONS | option), ()
    except (TypeError, ValueError, RecursionError):
        pass
    notes: list[str] = []
    safe = jsonable(value, notes)
    return orjson.dumps(safe, option=_OPTIONS | option), tuple(dict.fromkeys(notes))


def jsonable(
    value: Any, notes: list[str], *, _depth: int = 0, _seen: set[int] | None = None
) -> Any:
    """``value`` rebuilt from JSON-native parts; each stand-in appends a note to ``notes``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        fixed = safe_text(value)
        if fixed is not value and fixed != value:
            notes.append("a string held lone surrogates (a cut character): written as \\u escapes")
        return fixed
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return int(value)
        text = int_text(int(value))
        if text.startswith("<"):
            notes.append("an integer too long to write in full: written shortened, as a string")
        else:
            notes.append("an integer beyond 64 bits: written as a string")
        return text
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        notes.append("a NaN or infinite number: written as a string")
        return repr(value)
    if isinstance(value, Decimal):
        return jsonable(float(value), notes, _depth=_depth, _seen=_seen)
    if isinstance(value, enum.Enum):
        return jsonable(value.value, notes, _depth=_depth, _seen=_seen)
    if _depth >= MAX_DEPTH:
        notes.append(f"nesting deeper than {MAX_DEPTH} levels: the rest written as text")
        return safe_text(_bounded_repr(value))
    seen = _seen if _seen is not None else set()
    if id(value) in seen:
        notes.append("a value that contains itself: the repeat written as '<cycle>'")
        return "<cycle>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping | list | tuple | Set):
        seen.add(id(value))
        try:
            if isinstance(value, Mapping):
                out: dict[Any, Any] = {}
                for key, item in value.items():
                    out[_key(key, notes)] = jsonable(item, notes, _depth=_depth + 1, _seen=seen)
                return out
            return [jsonable(item, notes, _depth=_depth + 1, _seen=seen) for item in value]
        finally:
            seen.discard(id(value))
    try:
        orjson.dumps(value)
    except (TypeError, ValueError):
        text = safe_str(value)
        notes.append(f"a {type(value).__name__} object: written as its text")
        return safe_text(text)
    return value


def _key(key: Any, notes: list[str]) -> Any:
    if isinstance(key, str):
        fixed = safe_text(key)
        if fixed != key:
            notes.append("a key held lone surrogates: written as \\u escapes")
        return fixed
    if (
        key is None
        or isinstance(key, bool | float)
        or (isinstance(key, int) and _INT_MIN <= key <= _INT_MAX)
    ):
        return key
    notes.append(f"a {type(key).__name__} key: written as its text")
    return safe_text(safe_str(key))


def _bounded_repr(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- reading: the fields of aeval's own files (rows.jsonl, report.json, the run store) --------

_COUNT_MAX = 2**63 - 1


def _wrong(field: str, expected: str, value: object) -> ValueError:
    return ValueError(
        f"field {field!r}: expected {expected}, got {_bounded_repr(value, 60)} "
        f"({type(value).__name__}); the file was edited or damaged: write it again with aeval"
    )


def read_count(value: object, field: str) -> int:
    """``value`` as a count (an integer >= 0 that SQLite and JSON hold exactly).

    Raises:
        ValueError: Naming ``field``, what was expected and what was found.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _COUNT_MAX:
        raise _wrong(field, "an integer >= 0", value)
    return value


def read_number(
    value: object, field: str, *, low: float = -math.inf, high: float = math.inf
) -> float:
    """``value`` as a finite number from ``low`` to ``high``.

    Raises:
        ValueError: Naming ``field``, what was expected and what was found.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(field, _range(low, high), value)
    number = float(value) if abs(value) < 2**1023 else math.inf
    if not math.isfinite(number) or not low <= number <= high:
        raise _wrong(field, _range(low, high), value)
    return number


def _range(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return "a finite number"
    if math.isinf(high):
        return f"a number >= {low:g}"
    return f"a number from {low:g} to {high:g}"


def read_text(value: object, field: str) -> str:
    """``value`` as text.

    Raises:
        ValueError: Naming ``field``, what was expected and what was found.
    """
    if not isinstance(value, str):
        raise _wrong(field, "text", value)
    return value


def read_list(value: object, field: str) -> list[Any]:
    """``value`` as a JSON array.

    Raises:
        ValueError: Naming ``field``, what was expected and what was found.
    """
    if not isinstance(value, list | tuple):
        raise _wrong(field, "a list", value)
    return list(value)


def read_mapping(value: object, field: str) -> Mapping[str, Any]:
    """``value`` as a JSON object.

    Raises:
        ValueError: Naming ``field``, what was expected and what was found.
    """
    if not isinstance(value, Mapping):
        raise _wrong(field, "an object", value)
    return value


_SHOWN_DIGITS = 6


def int_text(value: int) -> str:
    """``str(value)``; an integer too long for ``str()`` (over 4,300 digits) shortened.

    Python refuses to write such an integer in decimal (``sys.get_int_max_str_digits``), so
    it is shown by its leading digits (rounded, from its logarithm), its last digits and its
    exact length: ``<int of 5001 digits: 1.00000e+5000, ending ...000000>``.
    """
    try:
        return str(value)
    except ValueError:
        pass
    magnitude = abs(value)
    digits = int(math.log10(magnitude)) + 1
    if magnitude < 10 ** (digits - 1):
        digits -= 1
    elif magnitude >= 10**digits:
        digits += 1
    exponent = digits - 1
    mantissa = 10 ** (math.log10(magnitude) - exponent)
    sign = "-" if value < 0 else ""
    last = str(magnitude % 10**_SHOWN_DIGITS).zfill(_SHOWN_DIGITS)
    return (
        f"<int of {digits} digits: {sign}{min(mantissa, 9.99999):.{_SHOWN_DIGITS - 1}f}"
        f"e+{exponent}, ending ...{last}>"
    )


def safe_str(value: object) -> str:
    """``str(value)``, or a description of the value when its ``__str__`` raises.

    An integer too long for ``str()`` is shortened (see :func:`int_text`).
    """
    if type(value) is int:
        return int_text(value)
    try:
        text = str(value)
    except Exception as exc:
        return f"<{type(value).__name__} object: str() raised {type(exc).__name__}>"
    if not isinstance(text, str):  # pragma: no cover - str() always returns str
        return repr(text)
    return text
