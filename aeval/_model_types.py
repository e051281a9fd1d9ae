"""The values strategies and model clients exchange: messages, options, replies, vectors, usage.

The ChatModel and Embedder contracts are in :mod:`aeval.abc`. These values live outside
`aeval.models` so that strategies depend on them without importing the HTTP
clients (httpx, tenacity); `aeval.models` re-exports them.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "Embeddings",
    "TokenTotal",
    "TokenUsage",
    "accepts_options",
    "model_name",
]


def model_name(model: object) -> str | None:
    """The name a model client goes by: its ``model``, ``model_name`` or ``name`` attribute."""
    for attribute in ("model", "model_name", "name"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


class TokenTotal:
    """The ``total_tokens`` of a value that counts ``prompt_tokens`` and ``completion_tokens``."""

    __slots__ = ()

    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class TokenUsage(TokenTotal):
    """Tokens a model call consumed."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

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


@dataclass(frozen=True, slots=True, init=False)
class ChatOptions:
    """Sampling options for one chat call; ``None`` leaves a setting to the model client.

    A caller (the judge) passes them as ``chat(messages, options=ChatOptions(...))`` to a
    model whose ``chat`` accepts ``options`` (see :func:`accepts_options`); they win over the
    client's own settings for that call.

    Example:
        >>> ChatOptions(max_tokens=16, stop=["END"]).payload()
        {'max_tokens': 16, 'stop': ['END']}

    Attributes:
        max_tokens: The most tokens the reply may have (the server stops there, with
            ``finish_reason`` ``"length"``).
        temperature: Sampling temperature.
        seed: The sampling seed, for servers that honour it.
        stop: Texts at which the server stops generating (at most 4 for OpenAI).

    Raises:
        TypeError: An option has the wrong type.
        ValueError: An option is out of range.
    """

    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> None:
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if temperature is not None:
            if isinstance(temperature, bool) or not isinstance(temperature, int | float):
                raise TypeError(f"temperature must be a number, got {temperature!r}")
            if not math.isfinite(temperature) or temperature < 0:
                raise ValueError(f"temperature must be 0 or more, got {temperature!r}")
            temperature = float(temperature)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        stops: tuple[str, ...] | None = None
        if stop is not None:
            stops = (stop,) if isinstance(stop, str) else tuple(stop)
            if not stops or not all(isinstance(text, str) and text for text in stops):
                raise ValueError(f"stop must be a non-empty text or list of texts, got {stop!r}")
        object.__setattr__(self, "max_tokens", max_tokens)
        object.__setattr__(self, "temperature", temperature)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "stop", stops)

    def merged(self, other: ChatOptions | None) -> ChatOptions:
        """These options with those ``other`` sets (not ``None``) winning."""
        if other is None:
            return self
        return ChatOptions(
            max_tokens=other.max_tokens if other.max_tokens is not None else self.max_tokens,
            temperature=other.temperature if other.temperature is not None else self.temperature,
            seed=other.seed if other.seed is not None else self.seed,
            stop=other.stop if other.stop is not None else self.stop,
        )

    def payload(self) -> dict[str, Any]:
        """The options set, as the chat completions API names them."""
        fields = {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "stop": None if self.stop is None else list(self.stop),
        }
        return {key: value for key, value in fields.items() if value is not None}


def accepts_options(model: object) -> bool:
    """Whether ``model.chat`` takes ``options=`` (a :class:`ChatOptions`).

    The :class:`ChatModel` protocol does not require it, so chat models written before it
    existed keep working: callers pass options only to the models that accept them.
    """
    chat = getattr(model, "chat", None)
    if chat is None:
        return False
    try:
        parameters = inspect.signature(chat).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "options" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A chat model's reply.

    Attributes:
        text: The reply's text.
        usage: Tokens consumed, when the server reports them.
        model: The model that answered, when known.
        retries: Attempts beyond the first that this reply needed.
        metadata: Anything else worth keeping: ``finish_reason`` (``"length"`` when the
            reply was cut off at ``max_tokens``), the request id…
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
