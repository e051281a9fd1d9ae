"""Model clients and the protocols strategies depend on."""

from __future__ import annotations

from ._protocols import ChatMessage, ChatModel, ChatResponse, Embedder, Embeddings, TokenUsage

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "Embedder",
    "Embeddings",
    "TokenUsage",
]
