"""Event hooks that record the chat completions an ``httpx.AsyncClient`` receives."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter, time_ns
from typing import TYPE_CHECKING, Any

from ._chat import requested_model
from ._context import RECORDER, SEQUENCE, Recorder
from ._route import MODEL_CALL

if TYPE_CHECKING:
    import httpx

__all__ = ["httpx_event_hooks"]

_CHAT_PATH = "/chat/completions"
_EVENT_STREAM = b"text/event-stream"
_STREAM = b'"stream"'
# ``bytes.partition`` finds them: ``in`` first tries its operand as an integer, at the cost of
# an exception raised and cleared on every search.
_KEPT_BYTES = 8192
"""The most bytes of bodies a model call keeps until its trace is read; larger ones are
parsed when the response arrives."""


def _whole_chat(response: httpx.Response) -> bytes | None:
    """The request's body when ``response`` (2xx) is a whole chat completion; else ``None``.

    It is decided before the body is read: by the path as sent (which ``url.path`` decodes:
    the same unless it holds an escape), by whether the request asked for a stream (its body
    is parsed only when it may) and by the content type (what ``"text/event-stream" in
    headers.get("content-type", "")`` says: the words are ASCII and hold no ``", "``, which
    joins repeated headers). httpx's own fields are read where they exist, public ones
    otherwise.
    """
    try:
        request: httpx.Request = response._request  # type: ignore[assignment]
        path: str = request.url._uri_reference.path
    except AttributeError:  # another httpx
        request, path = response.request, "%"
    if not path.endswith(_CHAT_PATH) and ("%" not in path or not _chat_path(request)):
        return None
    try:
        content: bytes = request._content
    except AttributeError:
        try:
            content = request.content
        except RuntimeError:  # a streamed body, not read
            content = b""
    if content.partition(_STREAM)[1] and requested_model(content)[1]:
        return None
    headers = response.headers
    try:  # httpx's own (name, lowercased name, value) items: no header decoded
        for _, key, value in headers._list:
            if key == b"content-type" and value.partition(_EVENT_STREAM)[1]:
                return None
    except (AttributeError, TypeError, ValueError):
        if "text/event-stream" in headers.get("content-type", ""):
            return None
    return content


def _chat_path(request: httpx.Request) -> bool:
    return request.url.path.endswith(_CHAT_PATH)


def _keep(recorder: Recorder, content: bytes, response: httpx.Response, body: bytes) -> None:
    """Keep the call as its bodies, parsed when the trace is first read (at once when they are
    large, so that a trace holds no more than ``_KEPT_BYTES`` of them per call).

    The call lasted from the moment the client sent the request (the clock its stream keeps
    for ``response.elapsed``) until now, when the body has been read, and started that long
    ago: a float of nanoseconds, exact to a quarter of a microsecond, which is finer than two
    clocks read one after the other agree. A response no client bound (made by hand) lasted
    what its ``elapsed`` says, if it was set; otherwise its duration is unknown and it started
    now.
    """
    ended = time_ns()
    try:
        duration: float | None = perf_counter() - response.stream._start  # type: ignore[union-attr]
    except AttributeError:  # another httpx, or a response no client bound
        duration = _elapsed(response)
    at = ended if duration is None else ended - duration * 1e9
    events = recorder._events
    if events is None:
        events = recorder._list()
    if len(events) < recorder.limits.max_events and len(body) + len(content) <= _KEPT_BYTES:
        recorder._mixed = True  # before the entry, and counted after it (see Recorder.received)
        events.append((at, next(SEQUENCE), (body, content, duration)))
        recorder._received += 1
    else:
        recorder.received(at, (body, content, duration), len(body) + len(content) > _KEPT_BYTES)


def _elapsed(response: httpx.Response) -> float | None:
    try:
        return response.elapsed.total_seconds()
    except RuntimeError:  # not bound to a client
        return None


def _streamed_chat(response: httpx.Response) -> bytes | None:
    """The request's body when ``response`` is a streamed chat completion; else ``None``."""
    request = response.request
    if not _chat_path(request) or "text/event-stream" not in response.headers.get(
        "content-type", ""
    ):
        return None
    try:
        return request.content
    except RuntimeError:  # a streamed body, not read
        return b""


def _on_response(response: httpx.Response) -> None:
    recorder = RECORDER.get()
    if recorder is not None and 200 <= response.status_code < 300 and MODEL_CALL.get() is None:
        content = _whole_chat(response)
        if content is not None:
            _keep(recorder, content, response, response.read())
        else:
            content = _streamed_chat(response)
            if content is not None:
                from ._stream import watch_stream  # imports httpx: only once a stream is seen

                watch_stream(response, recorder, content)


async def _on_response_async(response: httpx.Response) -> None:
    recorder = RECORDER.get()
    if recorder is not None and 200 <= response.status_code < 300 and MODEL_CALL.get() is None:
        content = _whole_chat(response)
        if content is not None:
            _keep(recorder, content, response, await response.aread())
        else:
            content = _streamed_chat(response)
            if content is not None:
                from ._stream import watch_stream  # imports httpx: only once a stream is seen

                watch_stream(response, recorder, content)


def httpx_event_hooks(*, sync: bool = False) -> dict[str, list[Callable[[Any], Any]]]:
    """Event hooks that record each chat completion in the trace of the sample making it.

    Give them to any ``httpx.AsyncClient`` (or, with ``sync=True``, ``httpx.Client``) that
    talks to an OpenAI-compatible chat API (an agent framework's client, or your own): every
    response of ``…/chat/completions`` becomes a :class:`~aeval.trace.ModelCall` with the
    model, the tokens the server reported, the time from request to response and the tools
    the model asked to call. A streamed one (server-sent events) is recorded when the client
    has read it: tokens from its usage chunk (``stream_options={"include_usage": True}``),
    the tools from its deltas. Other endpoints and error statuses are left alone; a body that
    is not JSON records what is known. While a route records the model call as a whole (an
    ``aeval.integrations`` module) the hooks record nothing, so it is kept once. The
    hooks never fail the call. They keep the response's body (and the request's) and make
    the model call from it when the trace is first read, so a trace nothing reads costs no
    parse; bodies over 8 KB together are parsed as they arrive, so that an unread trace
    holds little. Only the response hook does anything (the call's duration is the client's
    own clock, what ``response.elapsed`` measures); the request list is there, empty, so
    that your own hooks can be added to either.

    Example::

        client = httpx.AsyncClient(event_hooks=aeval.trace.httpx_event_hooks())

    Args:
        sync: Hooks for ``httpx.Client`` (plain functions) instead of ``httpx.AsyncClient``.
    """
    if sync:
        return {"request": [], "response": [_on_response]}
    return {"request": [], "response": [_on_response_async]}
