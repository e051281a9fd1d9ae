"""Event hooks that record the chat completions an ``httpx.AsyncClient`` receives."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from time import perf_counter, time_ns
from typing import TYPE_CHECKING, Any

import orjson

from ._context import RECORDER, SEQUENCE, Recorder
from ._entries import RawModelCall
from ._values import ModelCall, frozen_model_call

if TYPE_CHECKING:
    import httpx

__all__ = ["httpx_event_hooks", "requested_tools"]

_CHAT_PATH = "/chat/completions"
_MAPPINGS = (dict, Mapping)  # a dict (what JSON gives) is told without the ABC's check
_EVENT_STREAM = b"text/event-stream"
_STREAM = b'"stream"'
# ``bytes.partition`` finds them: ``in`` first tries its operand as an integer, at the cost of
# an exception raised and cleared on every search.
_KEPT_BYTES = 8192
"""The most bytes of bodies a model call keeps until its trace is read; larger ones are
parsed when the response arrives."""


def requested_tools(data: Any) -> tuple[str, ...]:
    """The tool names a chat completion asks to call (``choices[].message.tool_calls``)."""
    names: list[str] = []
    choices = data.get("choices") if isinstance(data, _MAPPINGS) else None
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, _MAPPINGS) else None
        calls = message.get("tool_calls") if isinstance(message, _MAPPINGS) else None
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, _MAPPINGS) else None
            name = function.get("name") if isinstance(function, _MAPPINGS) else None
            if isinstance(name, str) and name:
                names.append(name)
    return tuple(names)


def _count(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, _MAPPINGS) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _requested_model(content: bytes) -> tuple[str | None, bool]:
    """The model a request's body names and whether it asks for a stream."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None, False
    if not isinstance(body, _MAPPINGS):
        return None, False
    model = body.get("model")
    return (model if isinstance(model, str) else None), body.get("stream") is True


class _Response(RawModelCall, tuple[bytes, bytes, float | None]):
    """A chat completion as received: ``(the response's body, the request's body, the seconds
    from request to response)``; the request's body is read when the response does not name
    its model. A tuple, made without a Python ``__init__``: the hooks make one per call."""

    __slots__ = ()

    def make(self, started: datetime) -> ModelCall:
        body, request, duration = self
        try:
            data: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            data = None
        usage = data.get("usage") if isinstance(data, _MAPPINGS) else None
        reported = data.get("model") if isinstance(data, _MAPPINGS) else None
        return frozen_model_call(
            reported if isinstance(reported, str) else _requested_model(request)[0],
            _count(usage, "prompt_tokens"),
            _count(usage, "completion_tokens"),
            duration,
            requested_tools(data),
            started,
        )


def _wanted(response: httpx.Response) -> tuple[Recorder, bytes] | None:
    """Where to record ``response`` and the request's body: ``None`` for one that is not a
    whole chat completion made while a trace records.

    Whether the call is recorded is decided here, before the body is read: by the path as
    sent (which ``url.path`` decodes: the same unless it holds an escape), the status, the
    content type (what ``"text/event-stream" in headers.get("content-type", "")`` says: the
    words are ASCII and hold no ``", "``, which joins repeated headers) and whether the
    request asked for a stream (its body is parsed only when it may). httpx's own fields are
    read where they exist, public ones otherwise.
    """
    recorder = RECORDER.get()
    if recorder is None or not 200 <= response.status_code < 300:
        return None
    try:
        request: httpx.Request = response._request  # type: ignore[assignment]
        path = request.url._uri_reference.path
    except AttributeError:  # another httpx
        request, path = response.request, "%"
    if "%" in path:
        path = request.url.path
    if not path.endswith(_CHAT_PATH):
        return None
    headers = response.headers
    try:  # httpx's own (name, lowercased name, value) items: no header decoded
        for _, key, value in headers._list:
            if key == b"content-type" and value.partition(_EVENT_STREAM)[1]:
                return None
    except (AttributeError, TypeError, ValueError):
        if "text/event-stream" in headers.get("content-type", ""):
            return None
    try:
        content: bytes = request._content
    except AttributeError:
        try:
            content = request.content
        except RuntimeError:  # a streamed body, not read
            content = b""
    if content.partition(_STREAM)[1] and _requested_model(content)[1]:
        return None
    return recorder, content


def _keep(recorder: Recorder, content: bytes, response: httpx.Response, body: bytes) -> None:
    """Keep the call as its bodies, parsed when the trace is first read (at once when they are
    large, so that a trace holds no more than ``_KEPT_BYTES`` of them per call).

    The call lasted from the moment the client sent the request (the clock its stream keeps
    for ``response.elapsed``) until now, when the body has been read, and started that long
    ago. A response no client bound (made by hand) lasted what its ``elapsed`` says, if it
    was set; otherwise its duration is unknown and it started now.
    """
    ended = time_ns()
    try:
        duration: float | None = perf_counter() - response.stream._start  # type: ignore[union-attr]
    except AttributeError:  # another httpx, or a response no client bound
        duration = _elapsed(response)
    at = ended if duration is None else ended - int(duration * 1e9)
    raw = _Response((body, content, duration))
    events = recorder._events
    if events is None:
        events = recorder._list()
    if len(events) < recorder.limits.max_events and len(body) + len(content) <= _KEPT_BYTES:
        recorder._mixed = True  # before the entry (see Recorder.received)
        events.append((at, next(SEQUENCE), raw))
    else:
        recorder.received(at, raw, len(body) + len(content) > _KEPT_BYTES)


def _elapsed(response: httpx.Response) -> float | None:
    try:
        return response.elapsed.total_seconds()
    except RuntimeError:  # not bound to a client
        return None


def _on_response(response: httpx.Response) -> None:
    wanted = _wanted(response)
    if wanted is not None:
        recorder, content = wanted
        _keep(recorder, content, response, response.read())


async def _on_response_async(response: httpx.Response) -> None:
    wanted = _wanted(response)
    if wanted is not None:
        recorder, content = wanted
        _keep(recorder, content, response, await response.aread())


def httpx_event_hooks(*, sync: bool = False) -> dict[str, list[Callable[[Any], Any]]]:
    """Event hooks that record each chat completion in the trace of the sample making it.

    Give them to any ``httpx.AsyncClient`` (or, with ``sync=True``, ``httpx.Client``) that
    talks to an OpenAI-compatible chat API (an agent framework's client, or your own): every
    non-streaming response of ``…/chat/completions`` becomes a
    :class:`~aeval.trace.ModelCall` with the model, the tokens the server reported, the time
    from request to response and the tools the model asked to call. Other endpoints, error
    statuses and streams are left alone; a body that is not JSON records what is known. The
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
