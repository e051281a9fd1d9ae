"""Model clients and the protocols strategies depend on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import lazy_package as _lazy_package

if TYPE_CHECKING:
    from .._model_types import (
        ChatMessage,
        ChatOptions,
        ChatResponse,
        Embeddings,
        TokenUsage,
        accepts_options as accepts_options,
    )
    from ..abc import ChatModel, Clock, Embedder
    from ._limits import ModelStatistics
    from ._policy import RateLimits, RetryPolicy
    from .local import LocalEmbedder, local_extra_missing as local_extra_missing
    from .openai import OpenAIChatModel, OpenAIEmbedder

_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    ".._model_types": (
        "ChatMessage",
        "ChatOptions",
        "ChatResponse",
        "Embeddings",
        "TokenUsage",
    ),
    "..abc": ("ChatModel", "Clock", "Embedder"),
    "._limits": ("ModelStatistics",),
    "._policy": ("RateLimits", "RetryPolicy"),
    ".local": ("LocalEmbedder",),
    ".openai": ("OpenAIChatModel", "OpenAIEmbedder"),
}
"""The module of each public name, imported on first use: importing a submodule of
``aeval.models`` (the response body's limits, which an HTTP target's configuration reads)
does not import the clients and httpx."""

_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}


_DEPRECATED = {
    "accepts_options": (".._model_types", "it is aeval's own machinery, not a user's concept"),
    "local_extra_missing": (
        ".local",
        "it is aeval's own machinery; LocalEmbedder() says what to install when it is missing",
    ),
}
"""Names that left ``__all__``, kept for one release behind a :class:`DeprecationWarning`."""

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
]

__getattr__, __dir__ = _lazy_package(globals(), _LAZY, deprecated=_DEPRECATED)
