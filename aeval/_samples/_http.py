"""Fetching sample files over http(s), kept apart so that importing aeval does not import httpx.

Every download runs within :class:`~aeval.DownloadLimits`: one deadline for the whole of it,
a cap on the body, redirects kept to the same host, and no connection to link-local or
other non-routable addresses. Each host, the first and every redirect's, is resolved and
checked before anything connects to it, and the connection goes to an address that was
checked (the URL's host is replaced by it; the ``Host`` header and the TLS server name stay
the host's), so a DNS answer that changes after the check cannot redirect it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import httpx

from .._exceptions import SampleLoadError
from ..models._body import format_size, read_capped
from ._formats import PARSERS, Parsed, format_of

if TYPE_CHECKING:
    from ._loaders import DownloadLimits

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
_OPERATION_TIMEOUT = 30.0
_MAX_REDIRECTS = 10
_METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254")})
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def fetch(source: str, limits: DownloadLimits) -> Parsed:
    """Download and parse the sample file at ``source``, blocking the calling thread.

    The download is :func:`afetch` in an event loop of its own (in a helper thread when
    this thread already runs one).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(afetch, source, limits)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="aeval-fetch") as pool:
        return pool.submit(anyio.run, afetch, source, limits).result()


async def afetch(source: str, limits: DownloadLimits) -> Parsed:
    """Download the sample file at ``source`` without blocking; parse it in a worker thread.

    Raises:
        SampleLoadError: The download failed or broke a limit, or the file is invalid.
    """
    make_client = partial(
        httpx.AsyncClient,
        follow_redirects=False,
        timeout=httpx.Timeout(min(_OPERATION_TIMEOUT, limits.timeout)),
    )
    client = await anyio.to_thread.run_sync(make_client)
    try:
        async with client:
            with anyio.fail_after(limits.timeout):
                url, content_type, content = await _download(client, source, limits)
    except TimeoutError:
        raise SampleLoadError(
            f"the download did not finish within {limits.timeout:g} s: check that the server "
            "is sending, or raise the limit with AEVAL_DOWNLOAD_TIMEOUT=<seconds> or "
            "DownloadLimits(timeout=...)",
            source=source,
        ) from None
    except httpx.HTTPError as exc:
        raise SampleLoadError(
            f"could not fetch the samples ({type(exc).__name__}: {exc}): check the URL and "
            "that the server is reachable",
            source=source,
        ) from exc
    return await anyio.to_thread.run_sync(_parse, source, url, content_type, content)


async def _download(
    client: httpx.AsyncClient, source: str, limits: DownloadLimits
) -> tuple[httpx.URL, str, bytes]:
    url = httpx.URL(source)
    addresses = await _check_address(url, limits, source, redirected=False)
    for _ in range(_MAX_REDIRECTS + 1):
        response = await _open(client, url, addresses)
        try:
            if response.is_redirect:
                location = response.headers["location"]
                url, addresses = await _follow(url, location, limits, source)
                continue
            if response.is_error:
                raise SampleLoadError(
                    f"HTTP {response.status_code} {response.reason_phrase}: check the URL and "
                    "that the server serves the sample file",
                    source=source,
                )
            content_type = response.headers.get("content-type", "")
            return url, content_type, await _read_body(response, limits, source)
        finally:
            await response.aclose()
    raise SampleLoadError(
        f"more than {_MAX_REDIRECTS} redirects: give the final URL of the sample file",
        source=source,
    )


async def _open(
    client: httpx.AsyncClient, url: httpx.URL, addresses: Sequence[_Address] | None
) -> httpx.Response:
    """GET ``url`` from the first of ``addresses`` that accepts a connection (by its host
    name when ``addresses`` is ``None``); the body is left to stream."""
    if addresses is None:
        return await client.send(client.build_request("GET", url), stream=True)
    *others, last = addresses
    for address in others:
        try:
            return await client.send(_pinned(client, url, address), stream=True)
        except httpx.ConnectError:
            continue
    return await client.send(_pinned(client, url, last), stream=True)


def _pinned(client: httpx.AsyncClient, url: httpx.URL, address: _Address) -> httpx.Request:
    """A GET of ``url`` sent to ``address``, as if to ``url``'s host (Host header, TLS name)."""
    return client.build_request(
        "GET",
        url.copy_with(host=str(address)),
        headers={"Host": url.netloc.decode("ascii")},
        extensions={"sni_hostname": url.raw_host.decode("ascii")},
    )


async def _follow(
    url: httpx.URL, location: str, limits: DownloadLimits, source: str
) -> tuple[httpx.URL, list[_Address] | None]:
    target = url.join(location)
    if target.scheme not in ("http", "https"):
        raise SampleLoadError(
            f"the server redirected to {target}: aeval fetches samples over http(s) only",
            source=source,
        )
    addresses = await _check_address(target, limits, source, redirected=True)
    if target.host != url.host and not limits.cross_host_redirects:
        raise SampleLoadError(
            f"the server redirected to {target}, on another host ({target.host}, not "
            f"{url.host}): use that URL directly if you trust it, or allow such redirects "
            "with AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS=1 or "
            "DownloadLimits(cross_host_redirects=True)",
            source=source,
        )
    return target, addresses


def _too_large(limits: DownloadLimits, source: str, declared: int | None) -> SampleLoadError:
    size = "larger" if declared is None else f"{format_size(declared)}, larger"
    return SampleLoadError(
        f"the response is {size} than the limit of {format_size(limits.max_bytes)}: split the "
        "file, or raise the limit with AEVAL_DOWNLOAD_MAX_BYTES=<bytes> or "
        "DownloadLimits(max_bytes=...)",
        source=source,
    )


async def _read_body(response: httpx.Response, limits: DownloadLimits, source: str) -> bytes:
    return await read_capped(
        response, limits.max_bytes, lambda declared: _too_large(limits, source, declared)
    )


def _refusal(address: _Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return None
    if address.is_link_local:
        return "a link-local address, where cloud metadata services answer"
    if address in _METADATA_ADDRESSES:
        return "a cloud metadata service address"
    if address in _SHARED_ADDRESS_SPACE:
        return (
            "in the shared address space 100.64.0.0/10, where cloud metadata services "
            "answer (100.100.100.200)"
        )
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    return None


async def _addresses(url: httpx.URL) -> tuple[bool, list[_Address], OSError | None]:
    """Whether the host is an IP address, the addresses it stands for, and why it could
    not be resolved."""
    try:
        return True, [ipaddress.ip_address(url.host)], None
    except ValueError:
        pass
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        found = await anyio.getaddrinfo(url.host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return False, [], exc
    addresses = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in found]
    return False, list(dict.fromkeys(addresses)), None


def _proxied(url: httpx.URL) -> bool:
    """Whether the environment sends ``url`` through a proxy (which resolves its host)."""
    proxies = urllib.request.getproxies()
    if not (proxies.get(url.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(url.host)


async def _check_address(
    url: httpx.URL, limits: DownloadLimits, source: str, *, redirected: bool
) -> list[_Address] | None:
    """Check the addresses of ``url``'s host; return those to connect to (``None``: connect
    by name, when the host is an IP address, the check is off, or a proxy of the environment
    connects for aeval and resolves the name itself)."""
    if limits.allow_non_routable:
        return None
    literal, addresses, failure = await _addresses(url)
    prefix = f"the server redirected to {url}: " if redirected else ""
    for address in addresses:
        reason = _refusal(address)
        if reason is None:
            continue
        named = url.host if literal else f"{url.host} ({address})"
        raise SampleLoadError(
            f"{prefix}refusing to connect to {named}, {reason}: sample files are fetched "
            "from routable hosts only; allow it with AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE=1 or "
            "DownloadLimits(allow_non_routable=True)",
            source=source,
        )
    if literal or _proxied(url):
        return None
    if failure is not None or not addresses:
        reason = "no address" if failure is None else failure.strerror or str(failure)
        raise SampleLoadError(
            f"{prefix}cannot resolve the host {url.host} ({reason}): check the URL and your "
            "network",
            source=source,
        )
    return addresses


def _parse(source: str, url: httpx.URL, content_type: str, content: bytes) -> Parsed:
    fmt = format_of(url.path) or format_of(httpx.URL(source).path)
    media_type = content_type.split(";")[0].strip().lower()
    fmt = fmt or _CONTENT_TYPES.get(media_type)
    if fmt is None:
        raise SampleLoadError(
            f"cannot tell the format: the URL path has no .yaml/.yml, .json or .jsonl/.ndjson "
            f"extension and the content-type is {media_type or 'missing'!r}; use such an "
            "extension or serve application/yaml, application/json or application/x-ndjson",
            source=source,
        )
    return PARSERS[fmt](content, source)
