"""Reading an HTTP body within a byte cap, shared by every client aeval runs.

The model clients, the HTTP target of ``aeval run`` and the sample downloader all read
bodies that a server they do not control sends. :func:`read_capped` counts the bytes
after decompression, so an endless body or a small gzip that expands to gigabytes stops as
soon as it passes the cap. gzip and deflate are decompressed here, 64 KiB at a time: httpx
would expand each 64 KiB read from the network at once (64 MB for a gzip of zeros). Other
encodings (brotli, zstd, when their packages are installed) are left to httpx.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

_STEP = 64 * 1024
_ZLIB_WBITS = {
    "gzip": zlib.MAX_WBITS | 16,
    "x-gzip": zlib.MAX_WBITS | 16,
    "deflate": zlib.MAX_WBITS,
}


class _ZlibDecoder:
    """Decompresses a gzip or deflate body in steps of at most ``_STEP`` bytes."""

    __slots__ = ("_encoding", "_obj", "_started")

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._obj = zlib.decompressobj(_ZLIB_WBITS[encoding])
        self._started = False

    def decode(self, data: bytes) -> Iterator[bytes]:
        while data and not self._obj.eof:
            try:
                chunk = self._obj.decompress(data, _STEP)
            except zlib.error as exc:
                if self._encoding == "deflate" and not self._started:
                    # deflate is sent with and without its zlib header, as httpx accepts
                    self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                import httpx

                raise httpx.DecodingError(
                    f"the {self._encoding} body cannot be decompressed: {exc}"
                ) from exc
            self._started = True
            data = self._obj.unconsumed_tail
            if chunk:
                yield chunk

    def flush(self) -> bytes:
        return self._obj.flush()


def _body(response: httpx.Response) -> tuple[AsyncIterator[bytes], _ZlibDecoder | None]:
    """The chunks to read ``response``'s body from, and the decoder they still need."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in _ZLIB_WBITS:
        return response.aiter_raw(), _ZlibDecoder(encoding)
    return response.aiter_bytes(), None


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
    source, decoder = _body(response)
    async for data in source:
        for chunk in (data,) if decoder is None else decoder.decode(data):
            body += chunk
            if len(body) > max_bytes:
                raise too_large(None)
    if decoder is not None:
        body += decoder.flush()
        if len(body) > max_bytes:
            raise too_large(None)
    return bytes(body)


async def read_prefix(response: httpx.Response, max_bytes: int = ERROR_BODY_BYTES) -> bytes:
    """The first ``max_bytes`` of a streamed ``response``'s decoded body; the rest is left.

    For error statuses, whose body only serves the message.
    """
    body = bytearray()
    source, decoder = _body(response)
    async for data in source:
        for chunk in (data,) if decoder is None else decoder.decode(data):
            body += chunk
            if len(body) >= max_bytes:
                return bytes(body[:max_bytes])
    if decoder is not None:
        body += decoder.flush()
    return bytes(body[:max_bytes])
