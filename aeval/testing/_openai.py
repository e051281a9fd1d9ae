"""The OpenAI API as the test server plays it: routes, scripted replies and reply bodies."""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

import orjson

from ._http import HTTPReply, RecordedRequest

__all__ = ["Kind", "OpenAIHandler", "Reply", "as_reply", "hashed_embedding", "render", "route"]

_WORD = re.compile(r"\w+")

Kind = Literal["chat", "embeddings", "models"]
"""The API a request calls."""

_ROUTES: dict[tuple[str, str], Kind] = {
    ("POST", "/chat/completions"): "chat",
    ("POST", "/embeddings"): "embeddings",
    ("GET", "/models"): "models",
}


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
    """One scripted reply of :class:`~aeval.testing.OpenAICompatibleServer`, faults included.

    A plain 200 reply to ``/v1/chat/completions`` is a chat completion whose message content
    is ``content``; to ``/v1/embeddings`` it carries ``vectors`` (or the server's hashed
    embeddings when ``vectors`` is ``None``). Both report token usage (words counted).

    The server plays a real one's token limit, a word standing for a token: a content longer
    than the request's ``max_tokens`` is cut there, with ``finish_reason`` ``"length"``. A
    :meth:`rambling` reply is a model that does not stop: its text repeats until
    ``max_tokens``, or until ``context_tokens`` when the request sets none, taking
    ``seconds_per_token`` per word.

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
        finish_reason: The chat completion's ``finish_reason`` (``"length"`` when the server
            cut the content at ``max_tokens``).
        repeat: The content repeats until the token limit (see :meth:`rambling`).
        context_tokens: The limit of a rambling reply when the request sets no
            ``max_tokens`` (the server's context size).
        seconds_per_token: Generation time per word of the reply sent, added to ``delay``.
        per_token: Embeddings come as one hashed vector per word of each text, as a server
            without pooling sends them (llama.cpp's ``--pooling none``).
        tool_calls: The tools the assistant asks to call, as ``(name, arguments)`` pairs: the
            message carries them as OpenAI ``tool_calls`` (see :meth:`calling`).

    A chat request with ``"stream": true`` gets the same completion as OpenAI streams it:
    server-sent events of ``chat.completion.chunk`` objects (the role, the content word by
    word, each tool call's id and name then its arguments in fragments, the finish reason, and
    a last chunk with the usage when ``stream_options.include_usage`` is true), then
    ``data: [DONE]``.
    """

    content: str | None = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str = "application/json"
    delay: float = 0.0
    drop: bool = False
    vectors: Sequence[Sequence[float]] | Sequence[Sequence[Sequence[float]]] | None = None
    usage: tuple[int, int] | None = None
    finish_reason: str = "stop"
    repeat: bool = False
    context_tokens: int = 4096
    seconds_per_token: float = 0.0
    per_token: bool = False
    tool_calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()

    @classmethod
    def calling(cls, *calls: tuple[str, Mapping[str, Any]], content: str | None = None) -> Reply:
        """A chat completion asking to call tools, as a model with tools does.

        The message holds one OpenAI ``tool_calls`` entry per ``(name, arguments)`` pair (ids
        ``call_<request>_<index>``, the arguments as a JSON string), ``content`` (``null`` by
        default) and ``finish_reason`` ``"tool_calls"``.

        Example:
            >>> Reply.calling(("get_weather", {"city": "Mysore"})).finish_reason
            'tool_calls'
        """
        if not calls:
            raise ValueError("Reply.calling needs at least one (name, arguments) pair")
        return cls(content=content, tool_calls=tuple(calls), finish_reason="tool_calls")

    @classmethod
    def text(
        cls, content: str, *, usage: tuple[int, int] | None = None, finish_reason: str = "stop"
    ) -> Reply:
        """A chat completion whose content is ``content``."""
        return cls(content=content, usage=usage, finish_reason=finish_reason)

    @classmethod
    def rambling(
        cls,
        content: str = "and so on",
        *,
        context_tokens: int = 4096,
        seconds_per_token: float = 0.0,
    ) -> Reply:
        """A model that does not stop: ``content`` again and again until the token limit.

        The reply ends at the request's ``max_tokens`` or, without one, at
        ``context_tokens`` (a small model generating until its context is full), with
        ``finish_reason`` ``"length"``; it takes ``seconds_per_token`` per word, released
        when the server stops.
        """
        return cls(
            content=content,
            repeat=True,
            context_tokens=context_tokens,
            seconds_per_token=seconds_per_token,
        )

    @classmethod
    def token_embeddings(cls) -> Reply:
        """Embeddings as a server without pooling sends them: one vector per word of a text."""
        return cls(per_token=True)

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


OpenAIHandler = Callable[[RecordedRequest], "Reply | str | None"]
"""Decides a chat or embeddings reply (a string is ``Reply.text``; ``None``: the default)."""


def as_reply(reply: Reply | str) -> Reply:
    """``reply``, a string being a plain text chat reply."""
    return Reply.text(reply) if isinstance(reply, str) else reply


def route(request: RecordedRequest) -> Kind | Reply:
    """The API ``request`` calls, or the error reply for a request the API would refuse."""
    path = request.path.split("?", 1)[0].rstrip("/").removeprefix("/v1")
    kind = _ROUTES.get((request.method, path))
    if kind is None:
        return Reply.error(404, f"no route for {request.method} {request.path}")
    if kind != "models" and not isinstance(request.json, dict):
        return Reply.error(400, "the request body is not a JSON object")
    return kind


def render(
    reply: Reply,
    kind: Kind | None,
    request: RecordedRequest,
    *,
    model: str,
    dimensions: int,
    default_content: str,
    number: int,
) -> HTTPReply:
    """``reply`` on the wire: an error body, the raw body, or the API's JSON for ``kind``.

    Args:
        reply: The scripted reply.
        kind: The API called; ``None`` for an error reply to a request it refused.
        request: The request answered.
        model: The model name when the request names none.
        dimensions: The size of hashed embeddings.
        default_content: The chat content of a reply without ``content``.
        number: The request's number, for the completion's id.
    """
    delay = reply.delay
    if reply.body is not None:
        payload = reply.body
    elif reply.status >= 400 or kind is None:
        payload = orjson.dumps(
            {"error": {"message": reply.content, "type": "error", "code": reply.status}}
        )
    else:
        body = request.json if isinstance(request.json, dict) else {}
        name = body.get("model") or model
        if kind == "models":
            data: Any = {"object": "list", "data": [{"id": model, "object": "model"}]}
        elif kind == "embeddings":
            data = _embeddings(body, reply, name, dimensions)
        else:
            data, tokens = _completion(request, reply, name, default_content, number)
            delay += tokens * reply.seconds_per_token
            if body.get("stream") is True:
                options = body.get("stream_options")
                usage = isinstance(options, dict) and options.get("include_usage") is True
                return HTTPReply(
                    status=reply.status,
                    body=_events(data, usage=usage),
                    headers=reply.headers,
                    content_type="text/event-stream",
                    delay=delay,
                    drop=reply.drop,
                )
        payload = orjson.dumps(data)
    return HTTPReply(
        status=reply.status,
        body=payload,
        headers=reply.headers,
        content_type=reply.content_type,
        delay=delay,
        drop=reply.drop,
    )


def _embeddings(body: Mapping[str, Any], reply: Reply, model: str, dimensions: int) -> Any:
    raw = body.get("input", [])
    texts = [raw] if isinstance(raw, str) else [str(text) for text in raw]
    vectors: Any = reply.vectors
    if vectors is None and reply.per_token:
        vectors = [
            [hashed_embedding(word, dimensions) for word in text.split() or [text]]
            for text in texts
        ]
    elif vectors is None:
        vectors = [hashed_embedding(text, dimensions) for text in texts]
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


def _max_tokens(request: RecordedRequest) -> int | None:
    limit = request.json.get("max_tokens") if isinstance(request.json, dict) else None
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    return None


def _generated(reply: Reply, content: str, limit: int | None) -> tuple[str, str]:
    """The content the server sends and its finish reason, cut at ``limit`` words."""
    words = content.split()
    if reply.repeat:
        cap = limit if limit is not None else reply.context_tokens
        words = (words or ["..."]) * (cap // max(1, len(words)) + 1)
        return " ".join(words[:cap]), "length"
    if limit is not None and len(words) > limit:
        return " ".join(words[:limit]), "length"
    return content, reply.finish_reason


def _completion(
    request: RecordedRequest, reply: Reply, model: str, default_content: str, number: int
) -> tuple[Any, int]:
    message: dict[str, Any]
    if reply.tool_calls:
        content = reply.content or ""
        finish_reason = reply.finish_reason
        message = {
            "role": "assistant",
            "content": reply.content,
            "tool_calls": [
                {
                    "id": f"call_{number}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": orjson.dumps(arguments).decode()},
                }
                for index, (name, arguments) in enumerate(reply.tool_calls)
            ],
        }
    else:
        content = (reply.content if reply.content is not None else default_content) or ""
        content, finish_reason = _generated(reply, content, _max_tokens(request))
        message = {"role": "assistant", "content": content}
    prompt_tokens = sum(_count_words(str(m.get("content") or "")) for m in request.messages)
    prompt, completion = reply.usage or (prompt_tokens, _count_words(content))
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }, _count_words(content)


_FRAGMENT = 8
"""Characters of a tool call's JSON arguments per streamed delta."""


def _events(completion: dict[str, Any], *, usage: bool) -> bytes:
    """A chat completion as OpenAI streams it: server-sent events of ``chat.completion.chunk``
    objects (the role, the content word by word, each tool call's id and name then its
    arguments in fragments, the finish reason; with ``usage`` every chunk carries
    ``"usage": null`` and a last chunk without choices carries the usage), then ``[DONE]``."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {key: completion[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    head["system_fingerprint"] = None
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    content = message.get("content") or ""
    pieces = re.findall(r"\S+\s*|\s+", content)
    deltas.extend({"content": piece} for piece in pieces)
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": function["name"], "arguments": ""},
                    }
                ]
            }
        )
        arguments = function["arguments"]
        for start in range(0, len(arguments), _FRAGMENT):
            fragment = arguments[start : start + _FRAGMENT]
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
    chunks: list[dict[str, Any]] = [
        {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
        for delta in deltas
    ]
    chunks.append(
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {},
                    "logprobs": None,
                    "finish_reason": choice["finish_reason"],
                }
            ],
        }
    )
    if usage:
        for chunk in chunks:
            chunk["usage"] = None
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    lines = [b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks]
    lines.append(b"data: [DONE]\n\n")
    return b"".join(lines)
