"""Real HTTP/1.1 test servers on 127.0.0.1: scripted replies, recorded requests, faults.

:class:`ScriptedHTTPServer` answers from routes or a handler. :class:`BaseServer`, which it
shares with :class:`~aeval.testing.OpenAICompatibleServer`, owns the thread, the connections,
the record of requests and the wire format of an :class:`HTTPReply`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import anyio.to_thread
import orjson

__all__ = ["BaseServer", "HTTPHandler", "HTTPReply", "RecordedRequest", "ScriptedHTTPServer"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request a test server received.

    Attributes:
        method: ``GET``, ``POST``…
        path: The request path, query string included (``/v1/chat/completions``…).
        headers: The headers, names lower-cased.
        body: The raw body.
        json: The body decoded from JSON, ``None`` if it is not JSON.
        received_at: ``time.monotonic()`` when the request was read.
        client_address: The client's ``(host, port)``: one per connection (keep-alive).
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any
    received_at: float
    client_address: tuple[str, int] = ("", 0)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a chat completion request (empty otherwise)."""
        if isinstance(self.json, dict) and isinstance(self.json.get("messages"), list):
            return list(self.json["messages"])
        return []


@dataclass(frozen=True, slots=True)
class HTTPReply:
    """One scripted reply of :class:`ScriptedHTTPServer`, as it goes on the wire.

    ``Content-Length`` is the body's length unless ``headers`` declare one, which is sent as
    is (a body shorter than it says, as a broken server sends). A reply with ``stream``
    sends ``body``, then ``stream`` over and over, ``interval`` seconds apart, until the
    client leaves or the server stops: an endless or trickling body.

    Example:
        >>> HTTPReply.redirect("/samples.yaml").headers
        {'Location': '/samples.yaml'}
        >>> HTTPReply.json({"a": 1}).body
        b'{"a":1}'

    Attributes:
        status: The HTTP status.
        body: The body (sent first, before any ``stream``).
        headers: Extra response headers.
        content_type: The ``Content-Type`` header, if any.
        delay: Seconds to wait before answering (released when the server stops).
        drop: Close the connection without answering.
        stream: A piece of body repeated until the client leaves or the server stops.
        interval: Seconds between two pieces of ``stream``.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    delay: float = 0.0
    drop: bool = False
    stream: bytes | None = None
    interval: float = 0.0

    @classmethod
    def text(
        cls, body: str | bytes, *, status: int = 200, content_type: str = "text/plain"
    ) -> HTTPReply:
        """A body (a string is sent as UTF-8) with its content type."""
        data = body.encode() if isinstance(body, str) else body
        return cls(status=status, body=data, content_type=content_type)

    @classmethod
    def json(cls, value: Any, *, status: int = 200) -> HTTPReply:
        """``value`` serialised as compact JSON, ``application/json``."""
        return cls(status=status, body=orjson.dumps(value), content_type="application/json")

    @classmethod
    def error(cls, status: int, message: str = "") -> HTTPReply:
        """An error status with a plain-text body (the status phrase unless given)."""
        return cls.text(message or HTTPStatus(status).phrase, status=status)

    @classmethod
    def redirect(cls, location: str, *, status: int = 302) -> HTTPReply:
        """A redirect to ``location``."""
        return cls(status=status, headers={"Location": location})

    @classmethod
    def endless(
        cls,
        piece: bytes = b"x" * 65536,
        *,
        interval: float = 0.0,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = None,
    ) -> HTTPReply:
        """200 with a body that never ends: ``piece`` again and again, ``interval`` apart.

        With a declared ``Content-Length`` in ``headers`` and an ``interval`` it is a body
        that trickles in and never completes.
        """
        return cls(
            headers=dict(headers or {}),
            content_type=content_type,
            stream=piece,
            interval=interval,
        )


HTTPHandler = Callable[[RecordedRequest], HTTPReply | None]
"""Decides the reply to a request (``None``: no reply from this handler)."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: BaseServer

    def __init__(self, address: tuple[str, int], owner: BaseServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _RequestHandler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        with self.connections_lock:
            self.connections.add(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections the client or a fault closed are expected; nothing to print."""

    def drop_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer
    _ended = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``server.requests`` instead."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            decoded = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            decoded = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            json=decoded,
            received_at=time.monotonic(),
            client_address=(str(self.client_address[0]), int(self.client_address[1])),
        )
        owner = self.server.owner
        owner._begin(request)
        self._ended = False
        try:
            self._respond(owner, request)
        finally:
            self._end(owner)

    def _end(self, owner: BaseServer) -> None:
        if not self._ended:
            self._ended = True
            owner._end()

    def _respond(self, owner: BaseServer, request: RecordedRequest) -> None:
        try:
            reply = owner.reply_to(request)
        except Exception as error:
            reply = HTTPReply.error(500, f"handler raised {type(error).__name__}: {error}")
        if reply.delay and owner._stopping.wait(reply.delay):
            reply = HTTPReply(drop=True)
        self._end(owner)
        if reply.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        with contextlib.suppress(OSError):
            self._write(owner, reply)

    def _write(self, owner: BaseServer, reply: HTTPReply) -> None:
        self.send_response(reply.status)
        declared = {name.lower(): value for name, value in reply.headers.items()}
        if reply.content_type is not None and "content-type" not in declared:
            self.send_header("Content-Type", reply.content_type)
        length = declared.get("content-length")
        if length is None and reply.stream is None:
            self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.stream is not None or (length is not None and int(length) != len(reply.body)):
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body)
        if reply.stream is None:
            return
        while not owner._stopping.is_set():
            self.wfile.write(reply.stream)
            self.wfile.flush()
            if reply.interval and owner._stopping.wait(reply.interval):
                return


class BaseServer:
    """The base of the test servers: a thread serving 127.0.0.1, and what it received.

    Subclasses decide each reply in :meth:`reply_to`, which runs in a server thread. Every
    request is recorded in :attr:`requests`; :attr:`max_concurrent` is the most requests
    ever handled at once. Start and stop a server with ``async with``, ``with`` (from sync
    code or threads) or :meth:`start`/:meth:`stop`; :attr:`url` is valid once started.
    """

    _thread_name = "aeval-test-server"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._lock = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_concurrent = 0
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def reply_to(self, request: RecordedRequest) -> HTTPReply:
        """The reply to ``request``; an exception becomes a 500 naming it."""
        raise NotImplementedError

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, the server's root URL."""
        if self._server is None:
            raise RuntimeError("the server is not started: use `async with` or start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def max_concurrent(self) -> int:
        """The most requests that were being handled at the same moment.

        A request counts from when its body was read until its reply starts to be written,
        so this never exceeds the number of requests the clients had open at once.
        """
        with self._lock:
            return self._max_concurrent

    @property
    def in_flight(self) -> int:
        """Requests being handled right now."""
        with self._lock:
            return self._in_flight

    def wait_for_concurrent(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests have been handled at once; False on timeout.

        True as soon as :attr:`max_concurrent` reaches ``count``, so every waiter passes once
        the peak is reached. Meant for handlers (they run in server threads) that hold
        requests open until that many arrived, to observe or prove a client's concurrency.
        """
        with self._lock:
            return self._lock.wait_for(lambda: self._max_concurrent >= count, timeout)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests have been received in all; False on timeout.

        For a test whose client gave up on a request (a timeout, a cancellation) before the
        server read it: wait for the server's side instead of sleeping.
        """
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    def reset(self) -> None:
        """Forget the recorded requests and the concurrency peak."""
        with self._lock:
            self._requests.clear()
            self._max_concurrent = self._in_flight

    def start(self) -> None:
        """Bind the port and start serving in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        self._stopping.clear()
        self._server = _HTTPServer(self._address, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self._thread_name,
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, release slow and endless replies, close connections and the port."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.drop_connections()
        server.server_close()
        thread.join()
        self._server = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await anyio.to_thread.run_sync(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await anyio.to_thread.run_sync(self.stop)

    def _begin(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_concurrent = max(self._max_concurrent, self._in_flight)
            self._lock.notify_all()

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1


class ScriptedHTTPServer(BaseServer):
    """A real HTTP/1.1 server on 127.0.0.1 that answers each request from a script.

    A request whose path (query string included) is a key of :attr:`routes` gets that
    reply; else ``handler(request)`` decides (it runs in a server thread; ``None`` means it
    has no reply); else 404. Both can change while the server runs. Keep-alive, concurrent
    connections, slow, dropped, endless and trickling replies work; ``stop()`` releases the
    slow and endless ones.

    Example:
        >>> def test_download() -> None:
        ...     moved = HTTPReply.redirect("/s.yaml")
        ...     with ScriptedHTTPServer({"/s.yaml": HTTPReply.text(YAML), "/old": moved}) as server:
        ...         assert len(Samples.load_sync(f"{server.url}/old")) == 4
        ...     assert [r.path for r in server.requests] == ["/old", "/s.yaml"]

    Args:
        routes: Replies by request path.
        handler: Decides the replies to the other paths.
        host: The address to listen on.
        port: The port; 0 picks a free one.
    """

    _thread_name = "aeval-scripted-http-server"

    def __init__(
        self,
        routes: Mapping[str, HTTPReply] | None = None,
        *,
        handler: HTTPHandler | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host=host, port=port)
        self.routes: dict[str, HTTPReply] = dict(routes or {})
        self.handler = handler

    def reply_to(self, request: RecordedRequest) -> HTTPReply:
        """The route's reply, else the handler's, else 404."""
        reply = self.routes.get(request.path)
        if reply is None and self.handler is not None:
            reply = self.handler(request)
        if reply is None:
            return HTTPReply.error(404, f"no route for {request.method} {request.path}")
        return reply
