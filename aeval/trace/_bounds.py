"""How much of a tool's arguments and results a trace keeps, and JSON-safe copies of them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

__all__ = ["DEFAULT_LIMITS", "TraceLimits", "bounded", "cut_text", "flat", "plain"]


@dataclass(frozen=True, slots=True)
class TraceLimits:
    """The most a trace keeps of each recorded value, so a large result cannot fill memory or
    a report. What is cut is counted (``ToolCall.truncated``, ``Trace.truncated``); a model
    call's name and requested tools are bounded too, each cut marked in the value itself.

    Args:
        max_text: Characters kept of a string; the rest is replaced by a marker saying how
            many were cut.
        max_items: Items kept of a list or a mapping; a marker item says how many were cut.
        max_depth: Levels of nesting kept; deeper values become a marker.
        max_events: Events kept per trace; later ones are counted in ``Trace.dropped``.

    Raises:
        ValueError: A limit below 1.
    """

    max_text: int = 4000
    max_items: int = 100
    max_depth: int = 10
    max_events: int = 1000

    def __post_init__(self) -> None:
        for option in ("max_text", "max_items", "max_depth", "max_events"):
            value = getattr(self, option)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"TraceLimits.{option} must be an integer of at least 1, got {value!r}"
                )


DEFAULT_LIMITS = TraceLimits()


def cut_text(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` and a marker saying how many were cut."""
    return f"{text[:limit]}… [{len(text) - limit} of {len(text)} characters cut]"


class _Cutter:
    __slots__ = ("cuts", "limits")

    def __init__(self, limits: TraceLimits) -> None:
        self.limits = limits
        self.cuts = 0

    def text(self, text: str) -> str:
        if len(text) <= self.limits.max_text:
            return text
        self.cuts += 1
        return cut_text(text, self.limits.max_text)

    def value(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else repr(value)
        if depth >= self.limits.max_depth:
            self.cuts += 1
            return f"… [nested deeper than {self.limits.max_depth} levels, cut]"
        if isinstance(value, Mapping):
            return self.mapping(value, depth)
        if isinstance(value, list | tuple | set | frozenset):
            items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
            return self.sequence(items, depth)
        return self.other(value, depth)

    def mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index == self.limits.max_items:
                self.cuts += 1
                out["…"] = f"[{len(value) - index} more entries cut]"
                break
            out[key if isinstance(key, str) else str(key)] = self.value(item, depth + 1)
        return out

    def sequence(self, value: Any, depth: int) -> list[Any]:
        out = [self.value(item, depth + 1) for item in value[: self.limits.max_items]]
        if len(value) > self.limits.max_items:
            self.cuts += 1
            out.append(f"… [{len(value) - self.limits.max_items} more items cut]")
        return out

    def other(self, value: Any, depth: int) -> Any:
        if isinstance(value, datetime | date | time):
            return value.isoformat()
        if isinstance(value, bytes | bytearray):
            return f"<{len(value)} bytes>"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return self.mapping(fields, depth)
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            try:
                dumped = dump(mode="json")
            except Exception:
                dumped = None
            if isinstance(dumped, Mapping):
                return self.mapping(dumped, depth)
        try:
            text = str(value)
        except Exception:
            text = f"<{type(value).__name__}>"
        return self.text(text)


_SCALARS = (type(None), bool, int)


def plain(value: Any, limits: TraceLimits) -> bool:
    """Whether ``value`` is kept as it is: a scalar, a short string or a finite float."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is str:
        return len(value) <= limits.max_text
    return kind is float and math.isfinite(value)


def flat(mapping: dict[Any, Any], max_text: int) -> bool:
    """Whether a mapping holds only plain values under string keys: kept as it is."""
    for key, item in mapping.items():
        kind = type(item)
        if type(key) is not str or not (
            (kind is str and len(item) <= max_text)
            or kind in _SCALARS
            or (kind is float and math.isfinite(item))
        ):
            return False
    return True


def bounded(value: Any, limits: TraceLimits = DEFAULT_LIMITS) -> tuple[Any, int]:
    """A JSON-safe copy of ``value`` within ``limits``, and how many values were cut.

    Mappings become dicts with string keys, sequences and sets lists, dataclasses and pydantic
    models their fields, times ISO 8601 strings, non-finite floats their ``repr``, bytes their
    length, anything else its ``str``.
    """
    if plain(value, limits):
        return value, 0
    if type(value) is dict and len(value) <= limits.max_items and flat(value, limits.max_text):
        return dict(value), 0
    cutter = _Cutter(limits)
    return cutter.value(value, 0), cutter.cuts
