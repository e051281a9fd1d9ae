"""Event hooks that record the chat completions an ``httpx.AsyncClient`` receives."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ._context import RECORDER, Recorder, now
from ._recording import record_model_call

if TYPE_CHECKING:
    import httpx

__all__ = ["httpx_event_hooks", "requested_tools"]

_STARTED = "aeval.trace.started"
_CHAT_PATH = "/chat/completions"
_MAPPINGS = (dict, Mapping)  # a dict (what JSON gives) is told without the ABC's check


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


def _requested_model(request: httpx.Request) -> tuple[str | None, bool]:
    """The model a request names and whether it asks for a stream."""
    try:
        body = orjson.loads(request.content)
    except (orjson.JSONDecodeError, RuntimeError, TypeError):
        return None, False
    if not isinstance(body, _MAPPINGS):
        return None, False
    model = body.get("model")
    return (model if isinstance(model, str) else None), body.get("stream") is True


def _on_request(request: httpx.Request) -> None:
    recorder = RECORDER.get()
    if recorder is not None and request.url.path.endswith(_CHAT_PATH):
        request.extensions[_STARTED] = (recorder, time.perf_counter(), now())


async def _on_request_async(request: httpx.Request) -> None:
    _on_request(request)


def _wanted(response: httpx.Response) -> tuple[Recorder, float, Any, httpx.Request] | None:
    """Where to record ``response``: ``None`` for one that is not a whole chat completion.

    The request's body is parsed only when it may ask for a stream, or when the response
    does not name its model.
    """
    request = response.request
    started = request.extensions.get(_STARTED)
    if started is None or not 200 <= response.status_code < 300:
        return None
    if "text/event-stream" in response.headers.get("content-type", ""):
        return None
    try:
        content = request.content
    except RuntimeError:  # a streamed body, not read
        content = b""
    if b'"stream"' in content and _requested_model(request)[1]:
        return None
    recorder, began, at = started
    return recorder, began, at, request


def _finish(response: httpx.Response, wanted: tuple[Recorder, float, Any, httpx.Request]) -> None:
    recorder, began, at, request = wanted
    try:
        _record(recorder, response.content, request, began, at)
    except Exception:  # a body we cannot read must never fail the caller's request
        return


def _on_response(response: httpx.Response) -> None:
    wanted = _wanted(response)
    if wanted is not None:
        response.read()
        _finish(response, wanted)


async def _on_response_async(response: httpx.Response) -> None:
    wanted = _wanted(response)
    if wanted is not None:
        await response.aread()
        _finish(response, wanted)


def _record(recorder: Recorder, body: bytes, request: httpx.Request, began: float, at: Any) -> None:
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    usage = data.get("usage") if isinstance(data, _MAPPINGS) else None
    reported = data.get("model") if isinstance(data, _MAPPINGS) else None
    token = RECORDER.set(recorder)
    try:
        record_model_call(
            model=reported if isinstance(reported, str) else _requested_model(request)[0],
            prompt_tokens=_count(usage, "prompt_tokens"),
            completion_tokens=_count(usage, "completion_tokens"),
            duration=time.perf_counter() - began,
            requested_tools=requested_tools(data),
            started=at,
        )
    finally:
        RECORDER.reset(token)


def httpx_event_hooks(*, sync: bool = False) -> dict[str, list[Callable[[Any], Any]]]:
    """Event hooks that record each chat completion in the trace of the sample making it.

    Give them to any ``httpx.AsyncClient`` (or, with ``sync=True``, ``httpx.Client``) that
    talks to an OpenAI-compatible chat API (an agent framework's client, or your own): every
    non-streaming response of ``…/chat/completions`` becomes a
    :class:`~aeval.trace.ModelCall` with the model, the tokens the server reported, the time
    from request to response and the tools the model asked to call. Other endpoints, error
    statuses and streams are left alone; a body that is not JSON records what is known. The
    hooks never fail the call.

    Example::

        client = httpx.AsyncClient(event_hooks=aeval.trace.httpx_event_hooks())

    Args:
        sync: Hooks for ``httpx.Client`` (plain functions) instead of ``httpx.AsyncClient``.
    """
    if sync:
        return {"request": [_on_request], "response": [_on_response]}
    return {"request": [_on_request_async], "response": [_on_response_async]}
