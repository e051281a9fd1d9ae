"""What a model server's reply means for the client: the wait it asks for, whether the
request is worth repeating, and the hint an error message gives for its status."""

from __future__ import annotations

import email.utils
import time

import httpx

from .._exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseTooLargeError,
    ModelTimeoutError,
)
from ._body import format_size

__all__ = [
    "RETRYABLE_STATUSES",
    "is_rate_limited",
    "is_read_timeout",
    "is_retryable",
    "parse_retry_after",
    "retry_after",
    "status_hint",
    "too_large",
]

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds from ``now`` (``time.time()``); ``None`` if unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def retry_after(headers: httpx.Headers) -> float | None:
    """The wait a reply asks for: ``retry-after-ms`` (exact) over ``Retry-After`` (which
    providers round up to whole seconds)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(headers.get("Retry-After"))


def is_rate_limited(error: BaseException | None) -> bool:
    """Whether ``error`` is a 429: the provider saying "later"."""
    return isinstance(error, ModelHTTPError) and error.status == 429


def is_retryable(error: BaseException) -> bool:
    """Whether a request that failed with ``error`` is worth sending again."""
    if isinstance(error, ModelHTTPError):
        return error.status in RETRYABLE_STATUSES or error.status >= 500
    return isinstance(error, ModelConnectionError | ModelTimeoutError)


def is_read_timeout(error: BaseException) -> bool:
    """Whether the server took the request and has not answered in time."""
    return isinstance(error, ModelTimeoutError) and error.read_timeout


def status_hint(status: int, body: str, *, base_url: str, model: str) -> str:
    """What an error status most likely means, and what to change."""
    hints = {
        400: "bad request: the server rejected the request's parameters",
        401: "unauthorized: check the API key (api_key=..., AEVAL_API_KEY or OPENAI_API_KEY)",
        403: f"forbidden: the API key may not use model {model!r}",
        404: (
            f"not found: check the base URL {base_url!r} (it usually ends in /v1) "
            f"and the model name {model!r}"
        ),
        429: "rate limited by the server",
    }
    hint = hints.get(status, "server error" if status >= 500 else "request failed")
    lowered = body.lower()
    if status == 400 and "context" in lowered:
        hint += (
            "; the prompt and max_tokens do not fit the model's context: start the server "
            "with a larger one (llama.cpp -c, llama-cpp-python --n_ctx, Ollama num_ctx) or "
            "lower max_tokens"
        )
    elif status >= 500 and "llama_decode" in lowered:
        hint += (
            "; llama.cpp could not go on generating, usually because the reply filled the "
            "context: set max_tokens"
        )
    return hint


def too_large(
    kind: str, url: str, declared: int | None, *, limit: int
) -> ModelResponseTooLargeError:
    """The error for a reply past ``limit`` bytes (``declared``: its Content-Length, if any)."""
    size = "larger" if declared is None else f"{format_size(declared)}, larger"
    return ModelResponseTooLargeError(
        f"{kind} reply from {url} is {size} than the limit of {format_size(limit)} "
        "(counted after decompression), so reading stopped: check the server, or raise "
        "max_response_bytes=...",
        limit=limit,
    )
