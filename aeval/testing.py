"""What users need to test evaluations deterministically: a local OpenAI-compatible server.

:class:`OpenAICompatibleServer` is a real HTTP/1.1 server on 127.0.0.1 serving
``/v1/chat/completions``, ``/v1/embeddings`` and ``/v1/models`` with scripted replies and
fault injection; point :class:`~aeval.models.OpenAIChatModel` or
:class:`~aeval.models.OpenAIEmbedder` at its ``base_url``. The ``openai_server`` pytest
fixture starts one per test. ``python -m aeval.testing`` serves one from the command line
(in its own process, e.g. for benchmarks) until it is interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import math
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import anyio.to_thread
import orjson

__all__ = [
    "OpenAICompatibleServer",
    "RecordedRequest",
    "Reply",
    "hashed_embedding",
    "main",
    "openai_server",
]

_WORD = re.compile(r"\w+")


def hashed_embedding(text: str, dimensions: int = 64) -> list[float]:
    """A deterministic unit vector for ``text``: its lower-cased words hashed into buckets.

    Identical texts give identical vectors, texts sharing words give similar ones and texts
    with no word in common are (nearly) orthogonal. A text without words is hashed whole.

    Example:
        >>> hashed_embedding("The cat") == hashed_embedding("the CAT")
        True
    """
    vector = [0.0] * dimensions
    words = _WORD.findall(text.lower()) or [text]
    for word in words:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


def _count_words(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted reply of :class:`OpenAICompatibleServer`, faults included.

    A plain 200 reply to ``/v1/chat/completions`` is a chat completion whose message content
    is ``content``; to ``/v1/embeddings`` it carries ``vectors`` (or the server's hashed
    embeddings when ``vectors`` is ``None``). Both report token usage (words counted).

    Example:
        >>> Reply.rate_limited(retry_after=1).status
        429
        >>> Reply.json({"score": 90, "passed": True}).content
        '{"score":90,"passed":true}'

    Attributes:
        content: The assistant's message content (chat).
        status: The HTTP status; 4xx and 5xx send an OpenAI-style error body.
        headers: Extra response headers (``Retry-After``…).
        body: A raw body sent as is instead of the generated JSON.
        content_type: The body's content type.
        delay: Seconds to wait before answering (beyond the client's timeout: a timeout).
        drop: Close the connection without answering.
        vectors: The embeddings to return (embeddings).
        usage: ``(prompt_tokens, completion_tokens)`` to report instead of word counts.
    """

    content: str | None = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str = "application/json"
    delay: float = 0.0
    drop: bool = False
    vectors: Sequence[Sequence[float]] | None = None
    usage: tuple[int, int] | None = None

    @classmethod
    def text(cls, content: str, *, usage: tuple[int, int] | None = None) -> Reply:
        """A chat completion whose content is ``content``."""
        return cls(content=content, usage=usage)

    @classmethod
    def json(cls, value: Any) -> Reply:
        """A chat completion whose content is ``value`` serialised as compact JSON."""
        return cls(content=orjson.dumps(value).decode())

    @classmethod
    def fenced_json(cls, value: Any, *, prefix: str = "", suffix: str = "") -> Reply:
        """A chat completion whose content is ``value`` in a Markdown ```json fence."""
        fenced = f"```json\n{orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()}\n```"
        return cls(content=f"{prefix}{fenced}{suffix}")

    @classmethod
    def embeddings(cls, vectors: Sequence[Sequence[float]]) -> Reply:
        """An embeddings reply carrying ``vectors``."""
        return cls(vectors=vectors)

    @classmethod
    def error(cls, status: int, message: str = "") -> Reply:
        """An error status with an OpenAI-style ``{"error": {"message": ...}}`` body."""
        return cls(status=status, content=message or HTTPStatus(status).phrase)

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 1) -> Reply:
        """429 Too Many Requests, with ``Retry-After`` (seconds or an HTTP date) if given."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls(status=429, content="Rate limit reached", headers=headers)

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        """A 5xx error."""
        return cls.error(status)

    @classmethod
    def slow(cls, delay: float, content: str | None = None) -> Reply:
        """A reply sent after ``delay`` seconds (or when the server stops)."""
        return cls(content=content, delay=delay)

    @classmethod
    def dropped(cls) -> Reply:
        """Close the connection without sending a response."""
        return cls(drop=True)

    @classmethod
    def malformed(cls, body: bytes = b'{"choices": [{"message": ') -> Reply:
        """200 with a JSON content type and a body that is not valid JSON."""
        return cls(body=body)

    @classmethod
    def wrong_content_type(
        cls, body: bytes = b"<html><body>Welcome</body></html>", content_type: str = "text/html"
    ) -> Reply:
        """200 with a body that is not JSON at all, as a misconfigured proxy sends."""
        return cls(body=body, content_type=content_type)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request :class:`OpenAICompatibleServer` received.

    Attributes:
        method: ``GET`` or ``POST``.
        path: The request path (``/v1/chat/completions``…).
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


Handler = Callable[[RecordedRequest], "Reply | str | None"]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: OpenAICompatibleServer

    def __init__(self, address: tuple[str, int], owner: OpenAICompatibleServer) -> None:
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

    def _end(self, owner: OpenAICompatibleServer) -> None:
        if not self._ended:
            self._ended = True
            owner._end()

    def _respond(self, owner: OpenAICompatibleServer, request: RecordedRequest) -> None:
        reply, kind = owner._reply_for(request)
        if reply.delay and owner._stopping.wait(reply.delay):
            reply = Reply.dropped()
        if reply.drop:
            self.close_connection = True
            self._end(owner)
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.body is not None:
            payload = reply.body
        elif reply.status >= 400:
            payload = orjson.dumps(
                {"error": {"message": reply.content, "type": "error", "code": reply.status}}
            )
        else:
            payload = orjson.dumps(owner._success_body(kind, request, reply))
        self._end(owner)
        with contextlib.suppress(OSError):
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)


class OpenAICompatibleServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies and faults.

    It serves ``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models``
    (also without the ``/v1`` prefix) from a thread pool in a daemon thread: keep-alive and
    hundreds of concurrent connections work. Each chat request takes the next reply queued
    with :meth:`enqueue`, else asks ``handler`` (a function of the :class:`RecordedRequest`
    returning a :class:`Reply`, a string or ``None``), else sends ``default``. Embedding
    requests take :meth:`enqueue_embeddings` replies, else ``handler``, else
    :func:`hashed_embedding` vectors of ``dimensions``. Every request is recorded in
    :attr:`requests`; :attr:`max_concurrent` is the most requests ever handled at once.

    Start and stop it with ``async with``, ``with`` (from sync code or threads) or
    :meth:`start`/:meth:`stop`; ``base_url`` is valid once started.

    Example:
        >>> async def test_judge() -> None:
        ...     async with OpenAICompatibleServer([Reply.rate_limited(1), "true"]) as server:
        ...         async with OpenAIChatModel("judge", base_url=server.base_url) as model:
        ...             reply = await model.chat("Is Paris in France?")
        ...     assert (reply.text, reply.retries, len(server.requests)) == ("true", 1, 2)

    Args:
        replies: Chat replies to send first, in order (strings are ``Reply.text``).
        handler: Decides replies once the queue is empty; ``None`` from it means the default.
        default: The chat reply when neither the queue nor the handler gives one.
        model: The model name the replies carry.
        dimensions: The size of the hashed embeddings.
        host: The address to listen on.
        port: The port; 0 picks a free one.
    """

    def __init__(
        self,
        replies: Iterable[Reply | str] = (),
        *,
        handler: Handler | None = None,
        default: Reply | str = "true",
        model: str = "aeval-test-model",
        dimensions: int = 64,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.handler = handler
        self.default = default
        self.model = model
        self.dimensions = dimensions
        self._address = (host, port)
        self._lock = threading.Condition()
        self._chat_replies: deque[Reply] = deque(_as_reply(r) for r in replies)
        self._embedding_replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_concurrent = 0
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, to pass as a client's ``base_url``."""
        if self._server is None:
            raise RuntimeError("the server is not started: use `async with` or start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

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

    def enqueue(self, *replies: Reply | str) -> None:
        """Queue chat replies, sent in order before ``handler`` and ``default`` apply."""
        with self._lock:
            self._chat_replies.extend(_as_reply(r) for r in replies)

    def enqueue_embeddings(self, *replies: Reply) -> None:
        """Queue embedding replies, sent in order before ``handler`` and hashed vectors."""
        with self._lock:
            self._embedding_replies.extend(replies)

    def reset(self) -> None:
        """Forget the queued replies, the recorded requests and the concurrency peak."""
        with self._lock:
            self._chat_replies.clear()
            self._embedding_replies.clear()
            self._requests.clear()
            self._max_concurrent = self._in_flight

    def wait_for_concurrent(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests have been handled at once; False on timeout.

        True as soon as :attr:`max_concurrent` reaches ``count``, so every waiter passes once
        the peak is reached. Meant for handlers (they run in server threads) that hold
        requests open until that many arrived, to observe or prove a client's concurrency.
        """
        with self._lock:
            return self._lock.wait_for(lambda: self._max_concurrent >= count, timeout)

    def start(self) -> None:
        """Bind the port and start serving in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        self._stopping.clear()
        self._server = _HTTPServer(self._address, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="aeval-openai-server",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, release slow replies, close open connections and the port."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.drop_connections()
        server.server_close()
        thread.join()
        self._server = self._thread = None

    def __enter__(self) -> OpenAICompatibleServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> OpenAICompatibleServer:
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

    def _reply_for(self, request: RecordedRequest) -> tuple[Reply, str]:
        path = request.path.split("?", 1)[0].rstrip("/")
        path = path.removeprefix("/v1")
        kinds = {
            ("POST", "/chat/completions"): "chat",
            ("POST", "/embeddings"): "embeddings",
            ("GET", "/models"): "models",
        }
        kind = kinds.get((request.method, path))
        if kind is None:
            return Reply.error(404, f"no route for {request.method} {request.path}"), "error"
        if kind == "models":
            return Reply(), kind
        if not isinstance(request.json, dict):
            return Reply.error(400, "the request body is not a JSON object"), "error"
        with self._lock:
            queue = self._chat_replies if kind == "chat" else self._embedding_replies
            if queue:
                return queue.popleft(), kind
        if self.handler is not None:
            try:
                decided = self.handler(request)
            except Exception as error:
                return Reply.error(500, f"handler raised {type(error).__name__}: {error}"), kind
            if decided is not None:
                return _as_reply(decided), kind
        if kind == "chat":
            return _as_reply(self.default), kind
        return Reply(), kind

    def _success_body(self, kind: str, request: RecordedRequest, reply: Reply) -> Any:
        body = request.json if isinstance(request.json, dict) else {}
        model = body.get("model") or self.model
        if kind == "models":
            return {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        if kind == "embeddings":
            raw = body.get("input", [])
            texts = [raw] if isinstance(raw, str) else [str(text) for text in raw]
            vectors = reply.vectors
            if vectors is None:
                vectors = [hashed_embedding(text, self.dimensions) for text in texts]
            prompt_tokens = sum(_count_words(text) for text in texts)
            usage = reply.usage or (prompt_tokens, 0)
            return {
                "object": "list",
                "model": model,
                "data": [
                    {"object": "embedding", "index": i, "embedding": list(vector)}
                    for i, vector in enumerate(vectors)
                ],
                "usage": {"prompt_tokens": usage[0], "total_tokens": usage[0] + usage[1]},
            }
        content = reply.content if reply.content is not None else _as_reply(self.default).content
        content = content or ""
        messages = request.messages
        prompt_tokens = sum(_count_words(str(m.get("content", ""))) for m in messages)
        prompt, completion = reply.usage or (prompt_tokens, _count_words(content))
        return {
            "id": f"chatcmpl-{len(self._requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _as_reply(reply: Reply | str) -> Reply:
    return Reply.text(reply) if isinstance(reply, str) else reply


def _openai_server() -> Iterator[OpenAICompatibleServer]:
    """A started :class:`OpenAICompatibleServer`, stopped after the test.

    Bring it into a test module or ``conftest.py`` with
    ``from aeval.testing import openai_server`` (or ``openai_server = testing.openai_server``)
    and configure it inside the test with ``enqueue``, ``handler`` or ``default``.
    """
    with OpenAICompatibleServer() as server:
        yield server


openai_server: Any
try:
    import pytest
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    openai_server = _openai_server
else:
    openai_server = pytest.fixture(name="openai_server")(_openai_server)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve an :class:`OpenAICompatibleServer` until SIGINT or SIGTERM.

    ``python -m aeval.testing [--host H] [--port N] [--reply TEXT] [--model NAME]`` prints
    the server's base URL on the first line of stdout once it is listening, then answers
    every chat request with ``--reply`` and every embedding request with hashed vectors.
    Running the server in its own process keeps its threads off the client's interpreter,
    so a benchmark measures the client.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(
        prog="python -m aeval.testing",
        description="Serve a local OpenAI-compatible test server until interrupted.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument("--reply", default="true", help="the reply to every chat request")
    parser.add_argument("--model", default="aeval-test-model", help="the model name replied")
    parser.add_argument("--dimensions", type=int, default=64, help="hashed embedding size")
    args = parser.parse_args(argv)
    stop = threading.Event()
    previous = {
        signum: signal.signal(signum, lambda *_: stop.set())
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        with OpenAICompatibleServer(
            default=args.reply,
            model=args.model,
            dimensions=args.dimensions,
            host=args.host,
            port=args.port,
        ) as server:
            sys.stdout.write(f"{server.base_url}\n")
            sys.stdout.flush()
            stop.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
