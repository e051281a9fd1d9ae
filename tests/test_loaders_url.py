"""The limits of the URL sample loader, against a real server on 127.0.0.1."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from aeval import NoLoaderError, SampleLoadError, Samples
from aeval.testing import HTTPReply, RecordedRequest, ScriptedHTTPServer

DATA = Path(__file__).parent / "data" / "loaders"
SAMPLES = (DATA / "samples.yaml").read_bytes()
HANG_GUARD = 20.0


ROUTES = {
    "/samples.yaml": HTTPReply(body=SAMPLES),
    "/endless.jsonl": HTTPReply.endless(b"x" * 65536, content_type="application/x-ndjson"),
    "/declared.yaml": HTTPReply(body=b"- name: a\n", headers={"Content-Length": str(10**9)}),
    "/trickle.yaml": HTTPReply.endless(b"#", interval=0.2, headers={"Content-Length": "100000"}),
    "/redirect/same": HTTPReply.redirect("/samples.yaml"),
    "/redirect/chain": HTTPReply.redirect("/redirect/same"),
    "/redirect/loop": HTTPReply.redirect("/redirect/loop"),
    "/redirect/metadata": HTTPReply.redirect("http://169.254.169.254/latest/samples.yaml"),
    "/redirect/ftp": HTTPReply.redirect("ftp://127.0.0.1/samples.yaml"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with ScriptedHTTPServer(ROUTES) as scripted:
        port = scripted.url.rsplit(":", 1)[1]
        scripted.routes["/redirect/other"] = HTTPReply.redirect(
            f"http://127.0.0.2:{port}/samples.yaml"
        )
        scripted.routes["/redirect/localhost"] = HTTPReply.redirect(
            f"http://localhost:{port}/samples.yaml"
        )
        yield scripted.url


@pytest.fixture(autouse=True)
def _default_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "AEVAL_DOWNLOAD_MAX_BYTES",
        "AEVAL_DOWNLOAD_TIMEOUT",
        "AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS",
        "AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The hosts httpx opened TCP connections to (through anyio.connect_tcp)."""
    hosts: list[str] = []
    real = anyio.connect_tcp

    async def spy(remote_host: Any, *args: Any, **kwargs: Any) -> Any:
        hosts.append(str(remote_host))
        return await real(remote_host, *args, **kwargs)

    monkeypatch.setattr(anyio, "connect_tcp", spy)
    return hosts


async def _load_error(source: str) -> SampleLoadError:
    with anyio.fail_after(HANG_GUARD), pytest.raises(SampleLoadError) as info:
        await Samples.load(source)
    return info.value


# --- size ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_endless_response_stops_at_the_size_limit(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEVAL_DOWNLOAD_MAX_BYTES", "1000000")
    url = f"{server}/endless.jsonl"

    error = await _load_error(url)

    assert str(error) == (
        f"{url}: the response is larger than the limit of 977 KiB (1,000,000 bytes): split "
        "the file, or raise the limit with AEVAL_DOWNLOAD_MAX_BYTES=<bytes> or "
        "DownloadLimits(max_bytes=...)"
    )


@pytest.mark.anyio
async def test_an_endless_response_stops_at_the_default_limit(server: str) -> None:
    error = await _load_error(f"{server}/endless.jsonl")

    assert "larger than the limit of 100 MiB (104,857,600 bytes)" in str(error)


@pytest.mark.anyio
async def test_a_declared_length_beyond_the_limit_is_refused_before_reading(server: str) -> None:
    from aeval import DownloadLimits, HTTPSampleLoader

    loader = HTTPSampleLoader(DownloadLimits(max_bytes=10))
    url = f"{server}/declared.yaml"

    with anyio.fail_after(HANG_GUARD), pytest.raises(SampleLoadError) as info:
        await loader._aload(url)

    assert str(info.value).startswith(
        f"{url}: the response is 954 MiB (1,000,000,000 bytes), larger than the limit of "
        "10 bytes: split the file"
    )


@pytest.mark.anyio
async def test_a_body_within_the_limit_loads(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AEVAL_DOWNLOAD_MAX_BYTES", str(len(SAMPLES)))

    assert len(await Samples.load(f"{server}/samples.yaml")) == 4


# --- time ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_trickling_response_stops_at_the_total_deadline(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEVAL_DOWNLOAD_TIMEOUT", "1")
    url = f"{server}/trickle.yaml"

    error = await _load_error(url)

    assert str(error) == (
        f"{url}: the download did not finish within 1 s: check that the server is sending, "
        "or raise the limit with AEVAL_DOWNLOAD_TIMEOUT=<seconds> or DownloadLimits(timeout=...)"
    )


def test_the_blocking_load_has_the_same_deadline(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEVAL_DOWNLOAD_TIMEOUT", "1")

    with pytest.raises(SampleLoadError, match="did not finish within 1 s"):
        Samples.load_sync(f"{server}/trickle.yaml")


@pytest.mark.anyio
async def test_the_blocking_load_works_inside_an_event_loop(server: str) -> None:
    assert len(Samples.load_sync(f"{server}/samples.yaml")) == 4


# --- redirects -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/redirect/same", "/redirect/chain"])
async def test_redirects_within_the_host_are_followed(server: str, path: str) -> None:
    assert len(await Samples.load(server + path)) == 4


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "host"), [("/redirect/other", "127.0.0.2"), ("/redirect/localhost", "localhost")]
)
async def test_a_redirect_to_another_host_is_refused(
    server: str, connections: list[str], path: str, host: str
) -> None:
    url = server + path
    port = server.rsplit(":", 1)[1]

    error = await _load_error(url)

    assert str(error) == (
        f"{url}: the server redirected to http://{host}:{port}/samples.yaml, on another host "
        f"({host}, not 127.0.0.1): use that URL directly if you trust it, or allow such "
        "redirects with AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS=1 or "
        "DownloadLimits(cross_host_redirects=True)"
    )
    assert connections == ["127.0.0.1"]


@pytest.mark.anyio
async def test_a_redirect_to_another_host_is_followed_when_allowed(
    server: str, monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    monkeypatch.setenv("AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS", "1")

    assert len(await Samples.load(f"{server}/redirect/localhost")) == 4
    assert connections[0] == "127.0.0.1"
    assert connections[1:] and set(connections[1:]) <= {"127.0.0.1", "::1"}  # pinned, not by name


@pytest.mark.anyio
async def test_a_redirect_to_the_metadata_service_is_refused_before_connecting(
    server: str, connections: list[str]
) -> None:
    url = f"{server}/redirect/metadata"

    error = await _load_error(url)

    assert str(error) == (
        f"{url}: the server redirected to http://169.254.169.254/latest/samples.yaml: refusing "
        "to connect to 169.254.169.254, a link-local address, where cloud metadata services "
        "answer: sample files are fetched from routable hosts only; allow it with "
        "AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE=1 or DownloadLimits(allow_non_routable=True)"
    )
    assert connections == ["127.0.0.1"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/redirect/loop", "more than 10 redirects: give the final URL of the sample file"),
        (
            "/redirect/ftp",
            "the server redirected to ftp://127.0.0.1/samples.yaml: aeval fetches samples "
            "over http(s) only",
        ),
    ],
)
async def test_endless_and_non_http_redirects_are_refused(
    server: str, path: str, message: str
) -> None:
    url = server + path

    assert str(await _load_error(url)) == f"{url}: {message}"


# --- addresses -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("url", "named", "reason"),
    [
        (
            "http://169.254.169.254/latest/meta-data/s.yaml",
            "169.254.169.254",
            "a link-local address, where cloud metadata services answer",
        ),
        (
            "http://[fe80::1]:8080/s.yaml",
            "fe80::1",
            "a link-local address, where cloud metadata services answer",
        ),
        (
            "http://[::ffff:169.254.169.254]/s.yaml",
            "::ffff:169.254.169.254",
            "a link-local address, where cloud metadata services answer",
        ),
        ("http://[fd00:ec2::254]/s.yaml", "fd00:ec2::254", "a cloud metadata service address"),
        (
            "http://100.100.100.200/latest/meta-data/s.yaml",
            "100.100.100.200",
            "in the shared address space 100.64.0.0/10, where cloud metadata services answer "
            "(100.100.100.200)",
        ),
        (
            "http://[::ffff:100.64.0.1]/s.yaml",
            "::ffff:100.64.0.1",
            "in the shared address space 100.64.0.0/10, where cloud metadata services answer "
            "(100.100.100.200)",
        ),
        ("http://0.0.0.0:9/s.yaml", "0.0.0.0", "the unspecified address"),
        ("http://224.0.0.1/s.yaml", "224.0.0.1", "a multicast address"),
        ("http://255.255.255.255/s.yaml", "255.255.255.255", "a reserved address"),
    ],
)
async def test_non_routable_addresses_are_refused_before_connecting(
    connections: list[str], url: str, named: str, reason: str
) -> None:
    error = await _load_error(url)

    assert str(error) == (
        f"{url}: refusing to connect to {named}, {reason}: sample files are fetched from "
        "routable hosts only; allow it with AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE=1 or "
        "DownloadLimits(allow_non_routable=True)"
    )
    assert connections == []


@pytest.mark.anyio
async def test_a_host_name_is_resolved_and_its_addresses_checked(
    monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    resolved: list[tuple[str, int]] = []

    async def getaddrinfo(host: str, port: int, **kwargs: Any) -> list[Any]:
        resolved.append((host, port))
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fe80::a9fe:a9fe%2", port, 0, 2)),
        ]

    monkeypatch.setattr(anyio, "getaddrinfo", getaddrinfo)
    url = "https://metadata.internal.test/s.yaml"

    error = await _load_error(url)

    assert resolved == [("metadata.internal.test", 443)]
    assert str(error).startswith(
        f"{url}: refusing to connect to metadata.internal.test (fe80::a9fe:a9fe), a link-local "
        "address"
    )
    assert connections == []


@pytest.mark.anyio
async def test_the_connection_goes_to_the_address_that_was_checked(
    monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    """A DNS answer that changes after the check (rebinding) cannot move the connection."""
    host = "samples.rebind.test"
    answers: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(name: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (name.decode() if isinstance(name, bytes) else name) != host:
            return real(name, port, *args, **kwargs)
        address = "127.0.0.1" if not answers else "127.0.0.2"  # nothing listens there
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    server_names: list[object] = []
    send = httpx.AsyncClient.send

    async def spy(client: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> Any:
        server_names.append(request.extensions.get("sni_hostname"))
        return await send(client, request, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "send", spy)
    with ScriptedHTTPServer({"/samples.yaml": HTTPReply.text(SAMPLES)}) as scripted:
        port = scripted.url.rsplit(":", 1)[1]
        with anyio.fail_after(HANG_GUARD):
            samples = await Samples.load(f"http://{host}:{port}/samples.yaml")
        [request] = scripted.requests

    assert len(samples) == 4
    assert answers == ["127.0.0.1"]
    assert connections == ["127.0.0.1"]
    assert request.headers["host"] == f"{host}:{port}"
    assert server_names == [host]  # the TLS server name (SNI and certificate) of an https URL


@pytest.mark.anyio
async def test_the_next_checked_address_is_tried_when_one_refuses(
    monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    async def getaddrinfo(host: str, port: int, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(anyio, "getaddrinfo", getaddrinfo)
    with ScriptedHTTPServer({"/samples.yaml": HTTPReply.text(SAMPLES)}) as scripted:
        port = scripted.url.rsplit(":", 1)[1]
        with anyio.fail_after(HANG_GUARD):
            samples = await Samples.load(f"http://two.test:{port}/samples.yaml")

    assert len(samples) == 4
    assert connections == ["127.0.0.2", "127.0.0.1"]


@pytest.mark.anyio
async def test_a_host_that_does_not_resolve_is_not_reached_by_name(
    monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    for name in (
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)

    async def getaddrinfo(host: str, port: int, **kwargs: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(anyio, "getaddrinfo", getaddrinfo)
    url = "http://nowhere.rebind.test/s.yaml"

    assert str(await _load_error(url)) == (
        f"{url}: cannot resolve the host nowhere.rebind.test (Name or service not known): "
        "check the URL and your network"
    )
    assert connections == []


@pytest.mark.anyio
async def test_a_proxied_url_goes_to_the_proxy_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def proxy(request: RecordedRequest) -> HTTPReply:
        seen.append(request.path)
        return HTTPReply.text(SAMPLES)

    with ScriptedHTTPServer(handler=proxy) as scripted:
        monkeypatch.setenv("HTTP_PROXY", scripted.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with anyio.fail_after(HANG_GUARD):
            samples = await Samples.load("http://samples.example.test/s.yaml")

    assert len(samples) == 4
    assert seen == ["http://samples.example.test/s.yaml"]


@pytest.mark.anyio
async def test_non_routable_addresses_are_reached_when_allowed(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE", "yes")
    port = server.rsplit(":", 1)[1]

    assert len(await Samples.load(f"http://0.0.0.0:{port}/samples.yaml")) == 4


# --- knobs ---------------------------------------------------------------------------------


def test_the_default_limits() -> None:
    from aeval import DownloadLimits

    assert DownloadLimits() == DownloadLimits(
        max_bytes=100 * 1024 * 1024,
        timeout=300.0,
        cross_host_redirects=False,
        allow_non_routable=False,
    )
    assert DownloadLimits.from_env({}) == DownloadLimits()
    assert DownloadLimits.from_env(
        {
            "AEVAL_DOWNLOAD_MAX_BYTES": "1_000",
            "AEVAL_DOWNLOAD_TIMEOUT": "2.5",
            "AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS": "true",
            "AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE": "0",
        }
    ) == DownloadLimits(max_bytes=1000, timeout=2.5, cross_host_redirects=True)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"max_bytes": 0}, "max_bytes must be at least 1, got 0"),
        ({"max_bytes": 1.5}, "max_bytes must be an int, got 1.5"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
        ({"timeout": float("nan")}, "timeout must be a positive number of seconds, got nan"),
    ],
)
def test_limits_are_checked(changes: dict[str, Any], error: str) -> None:
    from aeval import DownloadLimits

    with pytest.raises((TypeError, ValueError), match=error):
        DownloadLimits(**changes)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "AEVAL_DOWNLOAD_TIMEOUT",
            "soon",
            "AEVAL_DOWNLOAD_TIMEOUT must be a positive number of seconds, got 'soon'",
        ),
        (
            "AEVAL_DOWNLOAD_MAX_BYTES",
            "1e9",
            "AEVAL_DOWNLOAD_MAX_BYTES must be a positive number of bytes, got '1e9'",
        ),
        (
            "AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE",
            "maybe",
            "AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE must be 1 or 0 (true or false), got 'maybe'",
        ),
    ],
)
async def test_a_bad_environment_variable_is_named(
    server: str, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    url = f"{server}/samples.yaml"

    assert str(await _load_error(url)) == f"{url}: {message}"


def test_a_loader_with_its_own_limits_overrides_the_built_in_one(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aeval import DownloadLimits, HTTPSampleLoader, register_loader, unregister_loader

    monkeypatch.setenv("AEVAL_DOWNLOAD_MAX_BYTES", "10")
    loader = HTTPSampleLoader(DownloadLimits(max_bytes=len(SAMPLES)))
    register_loader(loader, priority=1)
    try:
        assert loader.limits.max_bytes == len(SAMPLES)
        assert repr(loader) == f"HttpSampleLoader({loader.limits!r})"
        assert len(Samples.load_sync(f"{server}/samples.yaml")) == 4
    finally:
        assert unregister_loader(loader)
    with pytest.raises(SampleLoadError, match="larger than the limit of 10 bytes"):
        Samples.load_sync(f"{server}/samples.yaml")


@pytest.mark.anyio
async def test_a_file_url_is_not_fetched() -> None:
    with pytest.raises(NoLoaderError, match=r"use a plain path \(/data/s.yaml\)"):
        await Samples.load("file:///data/s.yaml")
