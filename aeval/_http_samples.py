"""Fetching sample files over http(s), kept apart so that importing aeval does not import httpx."""

from __future__ import annotations

from functools import partial

import anyio
import anyio.to_thread
import httpx

from ._exceptions import SampleLoadError
from ._sample_formats import PARSERS, Parsed, format_of

__all__ = ["afetch", "fetch"]

_CONTENT_TYPES = {
    "application/json": "json",
    "text/json": "json",
    "application/jsonl": "jsonl",
    "application/x-jsonl": "jsonl",
    "application/jsonlines": "jsonl",
    "application/x-jsonlines": "jsonl",
    "application/x-ndjson": "jsonl",
    "application/ndjson": "jsonl",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "text/yaml": "yaml",
    "text/x-yaml": "yaml",
}
_TIMEOUT = httpx.Timeout(30.0)


def fetch(source: str) -> Parsed:
    """Download and parse the sample file at ``source`` (blocking)."""
    try:
        with httpx.Client(follow_redirects=True, timeout=_TIMEOUT) as client:
            response = client.get(source)
    except httpx.HTTPError as exc:
        raise _fetch_error(exc, source) from exc
    return _parse_response(response, source)


async def afetch(source: str) -> Parsed:
    """Download the sample file at ``source`` without blocking; parse it in a worker thread."""
    make_client = partial(httpx.AsyncClient, follow_redirects=True, timeout=_TIMEOUT)
    client = await anyio.to_thread.run_sync(make_client)
    try:
        async with client:
            response = await client.get(source)
    except httpx.HTTPError as exc:
        raise _fetch_error(exc, source) from exc
    return await anyio.to_thread.run_sync(_parse_response, response, source)


def _fetch_error(exc: httpx.HTTPError, source: str) -> SampleLoadError:
    return SampleLoadError(
        f"could not fetch the samples ({type(exc).__name__}: {exc}): check the URL and that "
        "the server is reachable",
        source=source,
    )


def _parse_response(response: httpx.Response, source: str) -> Parsed:
    if response.is_error:
        raise SampleLoadError(
            f"HTTP {response.status_code} {response.reason_phrase}: check the URL and that "
            "the server serves the sample file",
            source=source,
        )
    fmt = format_of(response.url.path) or format_of(httpx.URL(source).path)
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    fmt = fmt or _CONTENT_TYPES.get(content_type)
    if fmt is None:
        raise SampleLoadError(
            f"cannot tell the format: the URL path has no .yaml/.yml, .json or .jsonl/.ndjson "
            f"extension and the content-type is {content_type or 'missing'!r}; use such an "
            "extension or serve application/yaml, application/json or application/x-ndjson",
            source=source,
        )
    return PARSERS[fmt](response.content, source)
