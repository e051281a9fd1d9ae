"""What strategies need from models: the ChatModel and Embedder protocols and their values.

They live outside `aeval.models` so that strategies depend on them without importing the HTTP
clients (httpx, tenacity); `aeval.models` re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "Embedder",
    "Embeddings",
    "TokenUsage",
    "model_name",
]


def model_name(model: object) -> str | None:
    """The name a model client goes by: its ``model``, ``model_name`` or ``name`` attribute."""
    for attribute in ("model", "model_name", "name"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a model call consumed."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat conversation (``role`` is system, user or assistant)."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A chat model's reply.

    Attributes:
        text: The reply's text.
        usage: Tokens consumed, when the server reports them.
        model: The model that answered, when known.
        retries: Attempts beyond the first that this reply needed.
        metadata: Anything else worth keeping (finish reason, request id…).
    """

    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str | None = None
    retries: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Embeddings:
    """Vectors for a batch of texts, in the order of the texts."""

    vectors: Sequence[Sequence[float]]
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str | None = None
    retries: int = 0


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model: messages in, a reply out."""

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool = False,
    ) -> ChatResponse:
        """Send the conversation and return the reply.

        Args:
            messages: The conversation, oldest first.
            json_mode: Ask the server for a JSON object reply where it supports that.
        """
        ...


@runtime_checkable
class Embedder(Protocol):
    """An async embedding model: a batch of texts in, one vector per text out."""

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed ``texts`` (in one or more requests, as the embedder sees fit)."""
        ...
