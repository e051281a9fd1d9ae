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
from ._policy import RateLimits, RetryPolicy
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
    "RateLimits",
    "RetryPolicy",
    "TokenUsage",
    "accepts_options",
    "local_extra_missing",
]
