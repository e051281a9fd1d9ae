"""Event hooks that record the chat completions an ``httpx.AsyncClient`` receives."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter, time_ns
from typing import TYPE_CHECKING, Any

from ._chat import requested_model
from ._context import RECORDER, SEQUENCE, Pending, Recorder
from ._entries import RawModelCall
from ._route import MODEL_CALL

if TYPE_CHECKING:
    import httpx

__all__ = ["httpx_event_hooks"]

_CHAT_PATH = "/chat/completions"
_STREAM = b'"stream"'
_SENT = "aeval.sent"
"""The request's extension holding when the request hook saw it go (``time.perf_counter()``)."""


def _chat_request(response: httpx.Response) -> bytes | None:
    """The request's body when ``response`` (2xx) answers a chat completion; else ``None``."""
    request = response.request
    if not request.url.path.endswith(_CHAT_PATH):
        return None
    try:
        return request.content
    except RuntimeError:  # a streamed body, not read
        return b""


def _asked_a_stream(content: bytes) -> bool:
    """Whether the request's body asked for a stream (parsed only when it may have)."""
    return bool(content.partition(_STREAM)[1]) and requested_model(content)[1]


def _streams(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def _keep(recorder: Recorder, content: bytes, response: httpx.Response, body: bytes) -> None:
    """Keep the call as its bodies, parsed when the trace is first read.

    The call lasted what the client measured (``response.elapsed``, from sending the request
    to reading the body) and started that long before now: a float of nanoseconds, exact to
    a quarter of a microsecond. A response no client bound (made by hand) lasted what its
    ``elapsed`` says, if it was set; otherwise its duration is unknown and it started now.
    """
    ended = time_ns()
    duration = _elapsed(response)
    at = ended if duration is None else ended - duration * 1e9
    pending: Pending = (next(SEQUENCE), at, None)
    recorder.add_model_call(pending, RawModelCall(body, content, duration))


def _elapsed(response: httpx.Response) -> float | None:
    try:
        return response.elapsed.total_seconds()
    except RuntimeError:  # not bound to a client, or not read
        return None


def _watch(recorder: Recorder, content: bytes, response: httpx.Response) -> None:
    from ._stream import watch_stream  # imports httpx: only once a stream is seen

    sent = response.request.extensions.get(_SENT)
    watch_stream(response, recorder, content, sent if isinstance(sent, float) else None)


def _recorder() -> Recorder | None:
    """The recorder a model call made here goes to: none while a route records it whole."""
    recorder = RECORDER.get()
    return None if recorder is None or MODEL_CALL.get() is not None else recorder


def _on_request(request: httpx.Request) -> None:
    if _recorder() is not None:
        request.extensions[_SENT] = perf_counter()


async def _on_request_async(request: httpx.Request) -> None:
    _on_request(request)


def _whole_chat(response: httpx.Response) -> tuple[Recorder, bytes] | None:
    """The recorder and the request's body when ``response`` is a whole chat completion to
    record (its body to be read); a streamed one is watched here, to be recorded once read."""
    recorder = _recorder()
    if recorder is None or not 200 <= response.status_code < 300:
        return None
    content = _chat_request(response)
    if content is None:
        return None
    if _streams(response):
        _watch(recorder, content, response)
        return None
    return None if _asked_a_stream(content) else (recorder, content)


def _on_response(response: httpx.Response) -> None:
    whole = _whole_chat(response)
    if whole is not None:
        _keep(*whole, response, response.read())


async def _on_response_async(response: httpx.Response) -> None:
    whole = _whole_chat(response)
    if whole is not None:
        _keep(*whole, response, await response.aread())


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
    holds little. The call's duration is the client's own clock (``response.elapsed``); the
    request hook notes when a request inside a sample is sent, for a stream's duration. Add
    your own hooks to either list.

    Example::

        client = httpx.AsyncClient(event_hooks=aeval.trace.httpx_event_hooks())

    Args:
        sync: Hooks for ``httpx.Client`` (plain functions) instead of ``httpx.AsyncClient``.
    """
    if sync:
        return {"request": [_on_request], "response": [_on_response]}
    return {"request": [_on_request_async], "response": [_on_response_async]}
