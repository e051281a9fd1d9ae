"""A transcript as JSON data, and back: how a conversation's row output is stored.

A row whose output is a :class:`~aeval.Transcript` writes it (in ``rows.jsonl``,
``report.json`` and the run store) in a tagged form, which reads back as a ``Transcript``::

    {"$aeval": "transcript", "ended": "script",
     "turns": [{"user": "...", "assistant": "...", "duration": 0.2, "trace": {...}}]}

``assistant`` is ``null`` on a turn that raised or timed out; ``trace`` and ``duration`` are
left out when the turn has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..trace import Trace
from ._values import ENDINGS, Transcript, Turn

__all__ = ["TAG", "TRANSCRIPT", "is_transcript_data", "transcript_from_data", "transcript_to_data"]

TAG = "$aeval"
"""The key that marks a tagged value in stored data."""
TRANSCRIPT = "transcript"
"""The tag of a transcript."""


def transcript_to_data(transcript: Transcript) -> dict[str, Any]:
    """The tagged, JSON-ready form of ``transcript``."""
    turns: list[dict[str, Any]] = []
    for turn in transcript.turns:
        entry: dict[str, Any] = {"user": turn.user, "assistant": turn.assistant}
        if turn.duration is not None:
            entry["duration"] = turn.duration
        if turn.trace is not None:
            entry["trace"] = turn.trace.to_dict()
        turns.append(entry)
    return {TAG: TRANSCRIPT, "ended": transcript.ended, "turns": turns}


def is_transcript_data(data: object) -> bool:
    """Whether ``data`` is a transcript's tagged form (cheap: one lookup on a dict)."""
    return isinstance(data, Mapping) and data.get(TAG) == TRANSCRIPT


def transcript_from_data(data: Mapping[str, Any]) -> Transcript:
    """Read back what :func:`transcript_to_data` wrote, checking every field.

    Raises:
        ValueError: A field is missing or of the wrong type; the message names it.
    """
    ended = data.get("ended")
    if ended not in ENDINGS:
        raise ValueError(
            f"field 'output.ended': expected one of {', '.join(ENDINGS)}, got {ended!r}"
        )
    entries = data.get("turns")
    if not isinstance(entries, list):
        raise ValueError("field 'output.turns': expected a list of turns")
    turns: list[Turn] = []
    for number, entry in enumerate(entries, 1):
        where = f"output.turns[{number}]"
        if not isinstance(entry, Mapping):
            raise ValueError(f"field '{where}': expected a mapping")
        user, assistant = entry.get("user"), entry.get("assistant")
        if not isinstance(user, str):
            raise ValueError(f"field '{where}.user': expected a text")
        if assistant is not None and not isinstance(assistant, str):
            raise ValueError(f"field '{where}.assistant': expected a text or null")
        duration = entry.get("duration")
        if duration is not None and (
            isinstance(duration, bool) or not isinstance(duration, int | float) or duration < 0
        ):
            raise ValueError(f"field '{where}.duration': expected seconds >= 0")
        trace = entry.get("trace")
        if trace is not None:
            if not isinstance(trace, Mapping):
                raise ValueError(f"field '{where}.trace': expected a mapping")
            try:
                trace = Trace.from_dict(trace)
            except ValueError as exc:
                raise ValueError(f"field '{where}.trace': {exc}") from None
        turns.append(Turn(user, assistant, trace, None if duration is None else float(duration)))
    return Transcript(tuple(turns), ended)
