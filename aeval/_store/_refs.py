"""Run references: a run id (or a unique start of one), ``latest``, ``latest~N``,
``NAME@latest`` and ``NAME@latest~N``."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Ref", "parse_ref"]

_LATEST = re.compile(r"latest(?:~(\d+))?")
MAX_BACK = 1_000_000_000
"""The largest N of ``latest~N`` (far more runs than any store holds)."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A parsed reference.

    Attributes:
        text: The reference as given.
        name: The run name after which ``@`` came, for ``NAME@latest~N``.
        back: N in ``latest~N`` (0 for ``latest``); ``None`` for a run id.
    """

    text: str
    name: str | None
    back: int | None

    @property
    def is_id(self) -> bool:
        """Whether the reference is a run id (or the start of one)."""
        return self.back is None


def _back(text: str, match: re.Match[str]) -> int:
    digits = match.group(1) or "0"
    if len(digits.lstrip("0")) > len(str(MAX_BACK)) or int(digits) > MAX_BACK:
        raise ValueError(
            f"run reference {text!r}: N in latest~N is at most {MAX_BACK:,} (the N-th run "
            "before the latest)"
        )
    return int(digits)


def parse_ref(text: str) -> Ref:
    """Parse a reference; a name may itself hold ``@`` (the last one counts).

    Raises:
        ValueError: An empty reference, ``@`` not followed by ``latest`` or ``latest~N``, or
            an N over :data:`MAX_BACK`.
    """
    if not isinstance(text, str):
        raise TypeError(f"a run reference is text, got {type(text).__name__}")
    ref = text.strip()
    if not ref:
        raise ValueError("an empty run reference: give a run id, latest, latest~1 or NAME@latest")
    match = _LATEST.fullmatch(ref)
    if match is not None:
        return Ref(text, None, _back(text, match))
    name, at, tail = ref.rpartition("@")
    if at:
        match = _LATEST.fullmatch(tail)
        if match is None or not name:
            raise ValueError(
                f"run reference {text!r}: after '@' write latest or latest~N "
                "(e.g. support-bot@latest~1)"
            )
        return Ref(text, name, _back(text, match))
    return Ref(text, None, None)
