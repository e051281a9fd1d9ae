"""The local OpenAI-compatible test server and its command line."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterable, Sequence

from ._http import BaseServer, HTTPReply, RecordedRequest
from ._openai import OpenAIHandler, Reply, as_reply, render, route

__all__ = ["OpenAICompatibleServer", "main"]


class OpenAICompatibleServer(BaseServer):
    """A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies and faults.

    It serves ``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models``
    (also without the ``/v1`` prefix) from a thread pool in a daemon thread: keep-alive and
    hundreds of concurrent connections work. Each chat request takes the next reply queued
    with :meth:`enqueue`, else asks ``handler`` (a function of the :class:`RecordedRequest`
    returning a :class:`Reply`, a string or ``None``), else sends ``default``. Embedding
    requests take :meth:`enqueue_embeddings` replies, else ``handler``, else
    :func:`hashed_embedding` vectors of ``dimensions``. Every request is recorded in
    :attr:`requests`; :attr:`max_concurrent` is the most requests ever handled at once.

    With ``slots=1`` it plays a server that generates one reply at a time (llama.cpp's
    server, Ollama by default): a reply holds its slot for its ``delay`` (and its
    generation time, see :meth:`Reply.rambling`) even after the client has left, and the
    other requests wait for the slot in arrival order. :attr:`generated` counts the replies
    whose generation finished, abandoned ones included.

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
        slots: Replies generated at once (``None``: no limit).
        host: The address to listen on.
        port: The port; 0 picks a free one.
    """

    _thread_name = "aeval-openai-server"

    def __init__(
        self,
        replies: Iterable[Reply | str] = (),
        *,
        handler: OpenAIHandler | None = None,
        default: Reply | str = "true",
        model: str = "aeval-test-model",
        dimensions: int = 64,
        slots: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if slots is not None and slots < 1:
            raise ValueError(f"slots must be at least 1 or None, got {slots}")
        super().__init__(host=host, port=port)
        self._slots = None if slots is None else threading.BoundedSemaphore(slots)
        self._generated = 0
        self.handler = handler
        self.default = default
        self.model = model
        self.dimensions = dimensions
        self._chat_replies: deque[Reply] = deque(as_reply(r) for r in replies)
        self._embedding_replies: deque[Reply] = deque()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, to pass as a client's ``base_url``."""
        return f"{self.url}/v1"

    def enqueue(self, *replies: Reply | str) -> None:
        """Queue chat replies, sent in order before ``handler`` and ``default`` apply."""
        with self._lock:
            self._chat_replies.extend(as_reply(r) for r in replies)

    def enqueue_embeddings(self, *replies: Reply) -> None:
        """Queue embedding replies, sent in order before ``handler`` and hashed vectors."""
        with self._lock:
            self._embedding_replies.extend(replies)

    @property
    def generated(self) -> int:
        """Replies whose generation finished (with ``slots``), the abandoned ones included."""
        with self._lock:
            return self._generated

    def wait_for_generated(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` replies were generated (with ``slots``); False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._generated >= count, timeout)

    def reset(self) -> None:
        """Forget the queued replies, the recorded requests and the concurrency peak."""
        with self._lock:
            self._chat_replies.clear()
            self._embedding_replies.clear()
        super().reset()

    def reply_to(self, request: RecordedRequest) -> HTTPReply:
        """The scripted reply to ``request``, rendered as the OpenAI API would send it."""
        kind = route(request)
        if isinstance(kind, Reply):
            reply, api = kind, None
        else:
            reply, api = self._choose(kind, request), kind
        with self._lock:
            number = len(self._requests)
        rendered = render(
            reply,
            api,
            request,
            model=self.model,
            dimensions=self.dimensions,
            default_content=as_reply(self.default).content or "",
            number=number,
        )
        if self._slots is None or api is None:
            return rendered
        return self._generate(rendered)

    def _generate(self, reply: HTTPReply) -> HTTPReply:
        """Hold a slot for the reply's delay, whether or not the client is still there."""
        assert self._slots is not None
        while not self._slots.acquire(timeout=0.05):
            if self._stopping.is_set():
                return HTTPReply(drop=True)
        try:
            if reply.delay and self._stopping.wait(reply.delay):
                return HTTPReply(drop=True)
        finally:
            self._slots.release()
            with self._lock:
                self._generated += 1
                self._lock.notify_all()
        return dataclasses.replace(reply, delay=0.0)

    def _choose(self, kind: str, request: RecordedRequest) -> Reply:
        if kind == "models":
            return Reply()
        with self._lock:
            queue = self._chat_replies if kind == "chat" else self._embedding_replies
            if queue:
                return queue.popleft()
        if self.handler is not None:
            try:
                decided = self.handler(request)
            except Exception as error:
                return Reply.error(500, f"handler raised {type(error).__name__}: {error}")
            if decided is not None:
                return as_reply(decided)
        if kind == "chat":
            return as_reply(self.default)
        return Reply()


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
