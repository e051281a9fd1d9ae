"""Model clients and the protocols strategies depend on."""

from __future__ import annotations

from .._model_types import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    Embeddings,
    TokenUsage,
    accepts_options,
)
from ..abc import ChatModel, Clock, Embedder
from ._limits import ModelStatistics
from .local import LocalEmbedder, local_extra_missing
from .openai import OpenAIChatModel, OpenAIEmbedder

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "Clock",
    "Embedder",
    "Embeddings",
    "LocalEmbedder",
    "ModelStatistics",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "TokenUsage",
    "accepts_options",
    "local_extra_missing",
]
