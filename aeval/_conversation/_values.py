"""The values of a conversation: what a target sees each turn, and the transcript it leaves."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..trace import Trace

__all__ = [
    "ENDINGS",
    "Conversation",
    "ConversationEnding",
    "ScriptedTurn",
    "SimulatedUser",
    "Transcript",
    "Turn",
]

ConversationEnding = Literal["script", "goal", "max-turns", "error", "timeout"]
"""Why a conversation ended: its script ran out, the simulated user reached its goal or its
most turns, a turn raised, or the conversation's time ran out."""

ENDINGS: tuple[ConversationEnding, ...] = ("script", "goal", "max-turns", "error", "timeout")

_NOTHING: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """One user message of a scripted conversation, with what its answer must show.

    Attributes:
        user: The user's message.
        expectations: Sample keys that hold for this turn's answer only, in metadata form
            (``must_contain``, ``expected_tools``, ...); empty when the turn checks nothing
            of its own.
    """

    user: str
    expectations: Mapping[str, Any] = field(default_factory=lambda: _NOTHING)

    def __post_init__(self) -> None:
        if not isinstance(self.expectations, MappingProxyType):
            object.__setattr__(self, "expectations", MappingProxyType(dict(self.expectations)))


@dataclass(frozen=True, slots=True)
class SimulatedUser:
    """A user played by a chat model (``Scorer(user_model=...)``).

    Attributes:
        persona: Who the user is, in the user model's prompt.
        goal: What the user wants; the user model says when it is reached.
        first: The first user messages, fixed; later ones come from the user model.
        max_turns: The most user turns (the fixed ones included).
    """

    persona: str
    goal: str
    first: tuple[str, ...] = ()
    max_turns: int = 6


@dataclass(frozen=True, slots=True)
class Turn:
    """One exchange: the user's message and the assistant's answer.

    Attributes:
        user: The user's message.
        assistant: The target's answer; ``None`` when the turn raised or timed out.
        trace: What the target did while answering (``None`` when nothing was recorded).
        duration: Seconds the target took for this turn.
    """

    user: str
    assistant: str | None
    trace: Trace | None = None
    duration: float | None = None


@dataclass(frozen=True, slots=True)
class Transcript:
    """A whole conversation: the row output of a conversation sample.

    Attributes:
        turns: The exchanges, in order; a turn that raised is the last one, with no answer.
        ended: Why the conversation ended (see :data:`ConversationEnding`).
    """

    turns: tuple[Turn, ...] = ()
    ended: ConversationEnding = "script"

    def __len__(self) -> int:
        return len(self.turns)

    def __iter__(self) -> Iterator[Turn]:
        return iter(self.turns)

    @property
    def messages(self) -> tuple[Mapping[str, str], ...]:
        """The conversation as role/content messages (a turn with no answer adds only its
        user message)."""
        messages: list[Mapping[str, str]] = []
        for turn in self.turns:
            messages.append(MappingProxyType({"role": "user", "content": turn.user}))
            if turn.assistant is not None:
                messages.append(MappingProxyType({"role": "assistant", "content": turn.assistant}))
        return tuple(messages)

    @property
    def last(self) -> str | None:
        """The last answer, ``None`` when the last turn has none."""
        return self.turns[-1].assistant if self.turns else None

    @property
    def trace(self) -> Trace | None:
        """Every turn's trace in one, in turn order (``None`` when no turn recorded any)."""
        traces = [turn.trace for turn in self.turns if turn.trace is not None]
        if not traces:
            return None
        if len(traces) == 1:
            return traces[0]
        return Trace(
            tool_calls=tuple(call for trace in traces for call in trace.tool_calls),
            model_calls=tuple(call for trace in traces for call in trace.model_calls),
            retrievals=tuple(item for trace in traces for item in trace.retrievals),
            truncated=sum(trace.truncated for trace in traces),
            dropped=sum(trace.dropped for trace in traces),
        )

    def __str__(self) -> str:
        lines: list[str] = []
        for number, turn in enumerate(self.turns, 1):
            lines.append(f"[{number}] user: {turn.user}")
            answer = "(no answer)" if turn.assistant is None else turn.assistant
            lines.append(f"[{number}] assistant: {answer}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Conversation:
    """What a conversation target receives on each user turn.

    Attributes:
        messages: The history as role/content mappings, this turn's user message last.
        id: Stable for one sample and repeat (``"{sample}#{repeat}"``), the same on every turn.
        state: A dict the target may keep between turns of this conversation.
        turn: This turn's number, from 1.
    """

    messages: Sequence[Mapping[str, str]]
    id: str
    state: dict[str, Any] = field(default_factory=dict)
    turn: int = 1

    @property
    def last(self) -> str:
        """This turn's user message."""
        return self.messages[-1]["content"]
