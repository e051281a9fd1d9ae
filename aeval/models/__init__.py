"""Model clients and the protocols strategies depend on."""

from __future__ import annotations

from .._protocols import ChatMessage, ChatModel, ChatResponse, Embedder, Embeddings, TokenUsage
from ._clock import Clock
from ._limits import ModelStatistics
from .local import LocalEmbedder, local_extra_missing
from .openai import OpenAIChatModel, OpenAIEmbedder

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "Clock",
    "Embedder",
    "Embeddings",
    "LocalEmbedder",
    "ModelStatistics",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "TokenUsage",
    "local_extra_missing",
]
