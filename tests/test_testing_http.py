from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import httpx
import pytest

from aeval.testing import HTTPReply, RecordedRequest, ScriptedHTTPServer

pytestmark = pytest.mark.anyio


def test_reply_factories() -> None:
    assert HTTPReply.text("ok") == HTTPReply(body=b"ok", content_type="text/plain")
    assert HTTPReply.text(b"\xff", status=201, content_type="x/y").body == b"\xff"
    assert HTTPReply.json({"a": [1, None]}) == HTTPReply(
        body=b'{"a":[1,null]}', content_type="application/json"
    )
    assert HTTPReply.error(503) == HTTPReply(
        status=503, body=b"Service Unavailable", content_type="text/plain"
    )
    assert HTTPReply.redirect("/b", status=301) == HTTPReply(status=301, headers={"Location": "/b"})
    endless = HTTPReply.endless(b"#", interval=0.5, headers={"Content-Length": "9"})
    assert (endless.stream, endless.interval, endless.body) == (b"#", 0.5, b"")


async def test_routes_by_path_then_the_handler_then_404() -> None:
    def handler(request: RecordedRequest) -> HTTPReply | None:
        if request.path == "/ask":
            return HTTPReply.json({"echo": request.json["q"], "auth": request.headers["x-key"]})
        return None

    routes = {
        "/data.yaml": HTTPReply.text("- a\n"),
        "/api?v=1": HTTPReply.json([1], status=201),
    }
    server = ScriptedHTTPServer(routes, handler=handler)
    async with server, httpx.AsyncClient(base_url=server.url) as client:
        data = await client.get("/data.yaml")
        api = await client.get("/api?v=1")
        other_query = await client.get("/api?v=2")
        asked = await client.post("/ask", json={"q": "why"}, headers={"X-Key": "k"})
        server.routes["/late"] = HTTPReply.text("added while running")
        late = await client.get("/late")
    assert (data.status_code, data.headers["content-type"]) == (200, "text/plain")
    assert data.text == "- a\n"
    assert data.headers["content-length"] == "4"
    assert (api.status_code, api.json()) == (201, [1])
    assert other_query.status_code == 404
    assert other_query.text == "no route for GET /api?v=2"
    assert asked.json() == {"echo": "why", "auth": "k"}
    assert late.text == "added while running"
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/data.yaml"),
        ("GET", "/api?v=1"),
        ("GET", "/api?v=2"),
        ("POST", "/ask"),
        ("GET", "/late"),
    ]
    assert server.requests[3].json == {"q": "why"}
    assert len({r.client_address for r in server.requests}) == 1


async def test_a_reply_without_a_content_type_sends_none() -> None:
    async with (
        ScriptedHTTPServer({"/": HTTPReply(body=b"raw")}) as server,
        httpx.AsyncClient() as c,
    ):
        response = await c.get(server.url + "/")
    assert "content-type" not in response.headers
    assert response.content == b"raw"


async def test_a_handler_that_raises_gives_a_500_naming_the_error() -> None:
    def handler(request: RecordedRequest) -> HTTPReply:
        raise KeyError("missing")

    async with ScriptedHTTPServer(handler=handler) as server, httpx.AsyncClient() as client:
        response = await client.get(f"{server.url}/x")
    assert (response.status_code, response.text) == (500, "handler raised KeyError: 'missing'")


async def test_redirects_are_followed_by_clients() -> None:
    routes = {"/old": HTTPReply.redirect("/new"), "/new": HTTPReply.text("moved here")}
    async with ScriptedHTTPServer(routes) as server, httpx.AsyncClient() as client:
        response = await client.get(f"{server.url}/old", follow_redirects=True)
    assert response.text == "moved here"
    assert [r.path for r in server.requests] == ["/old", "/new"]


async def test_an_endless_body_goes_on_until_the_client_leaves() -> None:
    routes = {"/endless": HTTPReply.endless(b"x" * 1000, content_type="application/x-ndjson")}
    async with ScriptedHTTPServer(routes) as server, httpx.AsyncClient() as client:
        async with client.stream("GET", f"{server.url}/endless") as response:
            received = 0
            async for chunk in response.aiter_raw():
                received += len(chunk)
                if received > 1_000_000:
                    break
        assert "content-length" not in response.headers
        assert response.headers["content-type"] == "application/x-ndjson"
        again = await client.get(f"{server.url}/missing")
    assert received > 1_000_000
    assert again.status_code == 404


async def test_a_trickling_body_keeps_its_declared_length_and_stop_ends_it() -> None:
    trickle = HTTPReply.endless(b"#", interval=30, headers={"Content-Length": "100000"})
    server = ScriptedHTTPServer({"/trickle": trickle})
    async with (
        server,
        httpx.AsyncClient() as client,
        client.stream("GET", f"{server.url}/trickle") as response,
    ):
        assert response.headers["content-length"] == "100000"
        chunks = response.aiter_raw()
        assert await chunks.__anext__() == b"#"
        await anyio.to_thread.run_sync(server.stop)
        with pytest.raises(httpx.RemoteProtocolError):
            await chunks.__anext__()


async def test_a_body_shorter_than_its_declared_length_ends_the_connection() -> None:
    short = HTTPReply(body=b"- name: a\n", headers={"Content-Length": str(10**9)})
    server = ScriptedHTTPServer({"/declared": short})
    async with (
        server,
        httpx.AsyncClient() as client,
        client.stream("GET", f"{server.url}/declared") as response,
    ):
        assert response.headers["content-length"] == "1000000000"
        with pytest.raises(httpx.RemoteProtocolError):
            await response.aread()


async def test_dropped_and_slow_replies() -> None:
    routes = {"/drop": HTTPReply(drop=True), "/slow": HTTPReply(delay=60, body=b"late")}
    server = ScriptedHTTPServer(routes)
    async with server, httpx.AsyncClient(base_url=server.url) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get("/drop")
        errors: list[BaseException] = []

        async def wait_for_slow() -> None:
            try:
                await client.get("/slow")
            except httpx.HTTPError as error:
                errors.append(error)

        async with anyio.create_task_group() as group:
            group.start_soon(wait_for_slow)
            assert await anyio.to_thread.run_sync(server.wait_for_requests, 2)
            await anyio.to_thread.run_sync(server.stop)
    assert [type(error) for error in errors] == [httpx.RemoteProtocolError]


def test_wait_for_requests_counts_every_request_and_times_out() -> None:
    with ScriptedHTTPServer({"/": HTTPReply.text("ok")}) as server:
        assert server.wait_for_requests(0)
        assert not server.wait_for_requests(1, timeout=0)
        callers = [threading.Thread(target=httpx.get, args=(server.url + "/",)) for _ in range(3)]
        for caller in callers:
            caller.start()
        assert server.wait_for_requests(3)
        for caller in callers:
            caller.join()
        server.reset()
        assert server.requests == []


def test_url_needs_a_started_server() -> None:
    server = ScriptedHTTPServer()
    with pytest.raises(RuntimeError, match="the server is not started"):
        _ = server.url
    with server:
        assert server.url.startswith("http://127.0.0.1:")
