"""Model clients and the protocols strategies depend on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import (
    ABC as _ABC,
    MACHINERY as _MACHINERY,
    deprecations as _deprecations,
    lazy_package as _lazy_package,
    name_modules as _name_modules,
    returned as _returned,
)

if TYPE_CHECKING:
    from .._model_types import (
        ChatMessage,
        ChatOptions,
        ChatResponse,
        Embeddings,
        TokenUsage,
        accepts_options as accepts_options,
    )
    from ..abc import ChatModel as ChatModel, Clock as Clock, Embedder as Embedder
    from ._limits import ModelStatistics as ModelStatistics
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
    "._policy": ("RateLimits", "RetryPolicy"),
    ".local": ("LocalEmbedder",),
    ".openai": ("OpenAIChatModel", "OpenAIEmbedder"),
}
"""The module of each public name, imported on first use: importing a submodule of
``aeval.models`` (the response body's limits, which an HTTP target's configuration reads)
does not import the clients and httpx."""

_LAZY = _name_modules(_LAZY_MODULES)

_DEPRECATED: dict[str, tuple[str, str]] = {
    **_deprecations(_ABC, {"..abc": ("ChatModel", "Clock", "Embedder")}),
    "ModelStatistics": ("._limits", _returned("client.statistics()")),
    "accepts_options": (".._model_types", _MACHINERY),
    "local_extra_missing": (
        ".local",
        "it is aeval's own machinery; LocalEmbedder() says what to install when it is missing",
    ),
}

__all__ = [
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "Embeddings",
    "LocalEmbedder",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "RateLimits",
    "RetryPolicy",
    "TokenUsage",
]

__getattr__, __dir__ = _lazy_package(globals(), _LAZY, deprecated=_DEPRECATED)
