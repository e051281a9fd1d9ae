"""Conversations: multi-turn samples, what their target sees each turn, their transcripts."""

from __future__ import annotations

from ._values import (
    ENDINGS,
    Conversation,
    ConversationEnding,
    ScriptedTurn,
    SimulatedUser,
    Transcript,
    Turn,
)

__all__ = [
    "ENDINGS",
    "Conversation",
    "ConversationEnding",
    "ScriptedTurn",
    "SimulatedUser",
    "Transcript",
    "Turn",
]
