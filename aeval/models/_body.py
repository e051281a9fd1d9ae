"""Reading an HTTP body within a byte cap, shared by every client aeval runs.

The model clients, the HTTP target of ``aeval run`` and the sample downloader all read
bodies that a server they do not control sends. :func:`read_capped` counts the bytes
after decompression (httpx decodes gzip, deflate, brotli and zstd as it streams), so an
endless body or a small gzip that expands to gigabytes stops as soon as it passes the cap.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

__all__ = [
    "DEFAULT_EMBEDDINGS_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ERROR_BODY_BYTES",
    "check_max_bytes",
    "format_size",
    "read_capped",
    "read_prefix",
]

DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""The largest chat reply, and HTTP target answer, read by default (4 MiB)."""

DEFAULT_EMBEDDINGS_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""The largest embeddings reply read by default (64 MiB: 256 texts of 3,072 floats as JSON
take about 17 MB)."""

ERROR_BODY_BYTES = 64 * 1024
"""How much of an error status's body is read: enough for its message, never an endless one."""


def format_size(count: int) -> str:
    """``count`` bytes for a message, e.g. ``1 MiB (1,048,576 bytes)``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit} ({count:,} bytes)"
    return f"{count:,} bytes"


def check_max_bytes(value: int, name: str = "max_response_bytes") -> int:
    """``value`` if it is a positive int.

    Raises:
        TypeError: It is not an int.
        ValueError: It is below 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (bytes), got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


async def read_capped(
    response: httpx.Response,
    max_bytes: int,
    too_large: Callable[[int | None], BaseException],
) -> bytes:
    """The decoded body of a streamed ``response``, at most ``max_bytes`` of it.

    Raises:
        BaseException: ``too_large(declared)`` as soon as the body passes ``max_bytes``:
            ``declared`` is the ``Content-Length`` when it announced more (nothing is read
            then), else ``None``.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large(int(declared))
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise too_large(None)
    return bytes(body)


async def read_prefix(response: httpx.Response, max_bytes: int = ERROR_BODY_BYTES) -> bytes:
    """The first ``max_bytes`` of a streamed ``response``'s decoded body; the rest is left.

    For error statuses, whose body only serves the message.
    """
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= max_bytes:
            break
    return bytes(body[:max_bytes])
