"""The conversation keys of a sample: ``turns:`` (scripted) and ``user:`` (simulated).

Like the agent keys they are kept in the sample's metadata under fixed keys, as plain lists
and mappings, so every copy of a sample keeps them (shards, Ray, rescoring, reports):
``turns`` holds ``[{"user": "...", "must_contain": [...], ...}, ...]`` and
``simulated_user`` holds ``{"persona", "goal", "first", "max_turns"}``. The sample's
``turns`` and ``user`` properties read them back as :class:`~aeval.ScriptedTurn` and
:class:`~aeval.SimulatedUser` values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._conversation import ScriptedTurn, SimulatedUser
from ._agent_keys import AGENT_KEYS, agent_problem

if TYPE_CHECKING:
    from ._model import EvaluationSample

__all__ = [
    "CONVERSATION_KEYS",
    "SIMULATED_USER",
    "TURNS",
    "TURN_KEYS",
    "check_conversation_metadata",
    "conversation_metadata",
    "is_conversation",
    "read_conversation_keys",
    "scripted_turns",
    "simulated_user",
    "turn_sample",
]

TURNS = "turns"
"""The metadata key of a scripted conversation's turns (``turns:``)."""
SIMULATED_USER = "simulated_user"
"""The metadata key of a simulated user (``user:``)."""
CONVERSATION_KEYS = ("turns", "user")
"""The sample file keys that make a sample a conversation."""

_TEXT_KEYS = ("must-contain", "must-not-contain")
TURN_KEYS = (
    "user",
    "expected-output",
    "expected-outputs",
    *_TEXT_KEYS,
    "expected-tools",
    "forbidden-tools",
    "expected-tool-arguments",
)
"""The keys a turn of ``turns:`` may have: its message and what its answer must show."""
_USER_KEYS = ("persona", "goal", "first", "max-turns")
_TURNS_FORM = 'turns: ["Plan a trip to Mysore", {user: "Make it cheaper", must-contain: [bus]}]'
_USER_FORM = (
    'user: {persona: "a student on a budget", goal: "a trip under 5000 INR", '
    'first: ["Plan a trip to Mysore"], max-turns: 4}'
)


def _metadata_key(key: str) -> str:
    if key in ("expected-output", "expected-outputs"):
        return "expected_output"
    return AGENT_KEYS.get(key, key.replace("-", "_"))


def _turn_problem(position: int, turn: Any) -> str | None:
    where = f"turn {position} of 'turns'"
    if isinstance(turn, str):
        return None if turn.strip() else f"{where} is blank: write the user's message"
    if not isinstance(turn, Mapping):
        return f"{where} must be the user's message or a mapping with 'user', write {_TURNS_FORM}"
    message = turn.get("user")
    if not isinstance(message, str) or not message.strip():
        return f"{where} has no 'user' message (a non-empty text), write {_TURNS_FORM}"
    if (unknown := _unknown_key(turn, TURN_KEYS)) is not None:
        return f"{where} has {unknown}: a turn has only the keys {', '.join(TURN_KEYS)}"
    if "expected-output" in turn and "expected-outputs" in turn:
        return f"{where} has both 'expected-output' and 'expected-outputs': use one of them"
    if not isinstance(turn.get("expected-outputs", []), list):
        return f"{where}: 'expected-outputs' must be a list, write expected-outputs: [...]"
    for key in _TEXT_KEYS:
        value = turn.get(key)
        texts = [value] if isinstance(value, str) else value
        if value is not None and (
            not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts)
        ):
            return f"{where}: '{key}' must be a text or a list of non-empty texts"
    for key in AGENT_KEYS:
        if key in turn and key in TURN_KEYS and (problem := agent_problem(key, turn[key])):
            return f"{where}: {problem}"
    return None


def _unknown_key(mapping: Mapping[Any, Any], known: Sequence[str]) -> str | None:
    """``the unknown key 'k'`` for the first key of ``mapping`` not in ``known``, else
    ``None``."""
    for key in mapping:
        if key not in known:
            return f"the unknown key {key!r}"
    return None


def _turn_entry(turn: Any) -> dict[str, Any]:
    if isinstance(turn, str):
        return {"user": turn}
    entry: dict[str, Any] = {"user": turn["user"]}
    for key, value in turn.items():
        if key == "user" or value is None:
            continue
        if key in (*_TEXT_KEYS, "expected-tools", "forbidden-tools") and isinstance(value, str):
            value = [value]
        entry[_metadata_key(key)] = value
    return entry


def _user_problem(user: Any) -> str | None:
    if not isinstance(user, Mapping):
        return f"'user' must be a mapping, write {_USER_FORM}"
    if (unknown := _unknown_key(user, _USER_KEYS)) is not None:
        return (
            f"'user' has {unknown}: it has only the keys {', '.join(_USER_KEYS)}, "
            f"write {_USER_FORM}"
        )
    for key in ("persona", "goal"):
        value = user.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"'user' needs a '{key}' (a non-empty text), write {_USER_FORM}"
    first = user.get("first", [])
    first = [first] if isinstance(first, str) else first
    if not isinstance(first, list) or not all(isinstance(m, str) and m.strip() for m in first):
        return "'user.first' must be a list of user messages, write first: [\"Hello\"]"
    most = user.get("max-turns", 6)
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        return f"'user.max-turns' must be a whole number >= 1, got {most!r}: write max-turns: 4"
    if most < len(first):
        return (
            f"'user.max-turns' ({most}) is less than the {len(first)} 'first' messages: "
            "raise max-turns or drop messages"
        )
    return None


def read_conversation_keys(
    item: Mapping[Any, Any],
) -> tuple[dict[str, Any], str | None, str | None]:
    """The metadata entries of a sample's ``turns:``/``user:``, the first problem and its key."""
    turns: Any = item.get("turns")
    user: Any = item.get("user")
    metadata = item.get("metadata")
    if isinstance(metadata, Mapping) and (TURNS in metadata or SIMULATED_USER in metadata):
        key = TURNS if TURNS in metadata else SIMULATED_USER
        return (
            {},
            f"'metadata' holds {key!r}, the key a conversation is kept under: write the "
            "conversation as turns: [...] or user: {...} at the sample's top level, or rename "
            "the metadata key",
            "metadata",
        )
    if turns is None and user is None:
        return {}, None, None
    if turns is not None and user is not None:
        return (
            {},
            "has both 'turns' (a scripted conversation) and 'user' (a simulated one): keep one",
            "user",
        )
    if turns is not None:
        if not isinstance(turns, list) or not turns:
            empty = f"'turns' must be a non-empty list of user messages, write {_TURNS_FORM}"
            return {}, empty, "turns"
        for position, turn in enumerate(turns, 1):
            if (wrong := _turn_problem(position, turn)) is not None:
                return {}, wrong, "turns"
        return {TURNS: [_turn_entry(turn) for turn in turns]}, None, None
    if (problem := _user_problem(user)) is not None:
        return {}, problem, "user"
    first = user.get("first", [])
    return (
        {
            SIMULATED_USER: {
                "persona": user["persona"],
                "goal": user["goal"],
                "first": [first] if isinstance(first, str) else list(first),
                "max_turns": user.get("max-turns", 6),
            }
        },
        None,
        None,
    )


def conversation_metadata(
    name: str, turns: Iterable[str | ScriptedTurn] | None, user: SimulatedUser | None
) -> dict[str, Any]:
    """The metadata entries of ``EvaluationSample(turns=..., user=...)``.

    Raises:
        ValueError: Both given, no turns, or a blank message.
        TypeError: A turn or the user has the wrong type.
    """
    if turns is not None and user is not None:
        raise ValueError(
            f"Sample {name!r}: give turns (a scripted conversation) or user (a simulated "
            "one), not both"
        )
    if user is not None:
        if not isinstance(user, SimulatedUser):
            raise TypeError(f"Sample {name!r}: user must be an aeval.SimulatedUser")
        if user.max_turns < max(1, len(user.first)):
            raise ValueError(
                f"Sample {name!r}: max_turns ({user.max_turns}) must be >= 1 and cover the "
                f"{len(user.first)} first messages"
            )
        return {
            SIMULATED_USER: {
                "persona": user.persona,
                "goal": user.goal,
                "first": list(user.first),
                "max_turns": user.max_turns,
            }
        }
    if turns is None:
        return {}
    if isinstance(turns, str):
        turns = [turns]
    entries: list[dict[str, Any]] = []
    for position, turn in enumerate(turns, 1):
        if isinstance(turn, str):
            turn = ScriptedTurn(turn)
        if not isinstance(turn, ScriptedTurn):
            raise TypeError(
                f"Sample {name!r}: turn {position} must be a str or an aeval.ScriptedTurn, got "
                f"{type(turn).__name__}"
            )
        if not turn.user.strip():
            raise ValueError(f"Sample {name!r}: turn {position} has a blank user message")
        entries.append({"user": turn.user, **turn.expectations})
    if not entries:
        raise ValueError(f"Sample {name!r}: turns must hold at least one user message")
    return {TURNS: entries}


def check_conversation_metadata(name: str, metadata: Mapping[str, Any]) -> None:
    """Check the conversation keys of a sample's metadata (set by hand, or read back).

    Raises:
        ValueError: ``turns`` is not a non-empty list of messages (texts or mappings with a
            ``user`` text), or ``simulated_user`` lacks its persona, goal or turns.
    """
    entries = metadata.get(TURNS)
    if entries is not None and (
        not isinstance(entries, list | tuple)
        or not entries
        or not all(
            isinstance(entry, str)
            or (isinstance(entry, Mapping) and isinstance(entry.get("user"), str))
            for entry in entries
        )
    ):
        raise ValueError(
            f"Sample {name!r}: metadata 'turns' holds a conversation's turns, a non-empty list "
            f"of messages, got {entries!r}: pass turns=[...] to EvaluationSample, or rename "
            "the metadata key"
        )
    user = metadata.get(SIMULATED_USER)
    if user is not None and not (
        isinstance(user, Mapping)
        and isinstance(user.get("persona"), str)
        and isinstance(user.get("goal"), str)
        and isinstance(user.get("max_turns", 6), int)
    ):
        raise ValueError(
            f"Sample {name!r}: metadata 'simulated_user' holds a simulated user (persona, "
            f"goal, first, max_turns), got {user!r}: pass user=SimulatedUser(...) to "
            "EvaluationSample, or rename the metadata key"
        )


def scripted_turns(metadata: Mapping[str, Any]) -> tuple[ScriptedTurn, ...]:
    """The scripted turns kept in a sample's metadata (empty when it has none)."""
    entries = metadata.get(TURNS)
    if not isinstance(entries, list | tuple):
        return ()
    turns: list[ScriptedTurn] = []
    for entry in entries:
        if isinstance(entry, str):
            turns.append(ScriptedTurn(entry))
        elif isinstance(entry, Mapping) and isinstance(entry.get("user"), str):
            rest = {key: value for key, value in entry.items() if key != "user"}
            turns.append(ScriptedTurn(entry["user"], rest))
    return tuple(turns)


def simulated_user(metadata: Mapping[str, Any]) -> SimulatedUser | None:
    """The simulated user kept in a sample's metadata, ``None`` when it has none."""
    entry = metadata.get(SIMULATED_USER)
    if not isinstance(entry, Mapping):
        return None
    return SimulatedUser(
        persona=str(entry.get("persona", "")),
        goal=str(entry.get("goal", "")),
        first=tuple(entry.get("first", ())),
        max_turns=int(entry.get("max_turns", 6)),
    )


def is_conversation(sample: EvaluationSample) -> bool:
    """Whether ``sample`` is a conversation (scripted or simulated)."""
    metadata = sample.metadata
    return TURNS in metadata or SIMULATED_USER in metadata


def turn_sample(sample: EvaluationSample, number: int) -> EvaluationSample:
    """The single-turn sample a strategy judges turn ``number`` (from 1) of ``sample`` with.

    Its metadata is the conversation sample's, without the conversation keys, with the
    scripted turn's expectations merged in (a turn's ``must_contain`` replaces the sample's);
    its expected output is the turn's ``expected_output`` when it has one, else the sample's.
    A turn the script does not hold (a simulated user's) adds nothing. Name, parameters and
    tags are the sample's.
    """
    from ._model import EvaluationSample

    metadata = {
        key: value
        for key, value in sample.metadata.items()
        if key != TURNS and key != SIMULATED_USER
    }
    expected = sample.expected_output
    turns = scripted_turns(sample.metadata)
    if 1 <= number <= len(turns):
        expectations = dict(turns[number - 1].expectations)
        if "expected_output" in expectations:
            expected = expectations.pop("expected_output")
        metadata.update(expectations)
    return EvaluationSample(
        sample.name, sample.parameters, expected, tags=sample.tags, metadata=metadata
    )
