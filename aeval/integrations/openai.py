"""The ``openai`` SDK's chat completions into aeval traces (``aeval-engine[openai]``).

After :func:`instrument`, every ``chat.completions.create`` of an ``openai.OpenAI`` or
``openai.AsyncOpenAI`` client made while a sample runs is a :class:`~aeval.trace.ModelCall` of
that sample (model, tokens, duration, the tools the model asked for; streamed or not), and the
tool calls of a hand-written tool loop are read from the conversation.

The SDK offers no extension point for this but ``http_client`` (one per client, which is what
``aeval.trace.httpx_event_hooks`` already serves): :func:`instrument` wraps the public methods
``openai.resources.chat.completions.Completions.create`` and ``AsyncCompletions.create``, which
every client, ``with_raw_response`` and ``chat.completions.stream`` go through.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from time import perf_counter, time_ns
from typing import Any

import orjson

from .._exceptions import MissingExtraError, UnmockedToolCall

try:
    import openai
    from openai.resources.chat import completions as _chat
except ImportError as exc:  # pragma: no cover - the extra is installed with the tests
    raise MissingExtraError(
        "aeval.integrations.openai records the openai SDK's calls, and openai is not "
        "installed: pip install 'aeval-engine[openai]'"
    ) from exc

from ..trace._context import RECORDER, Recorder
from ..trace._route import model_route, record_model
from ._once import once

__all__ = ["instrument"]

_ROUTE = "openai"
_STREAM_USAGE = threading.Event()
"""Set by ``instrument(stream_usage=True)``."""
_ANSWERED = ("aeval.integrations.openai", "answered")
"""When the sample's last model call answered (``time.time_ns()``), noted on its recorder."""


def instrument(*, stream_usage: bool = False) -> None:
    """Record the ``openai`` SDK's chat completions in the trace of the sample making them.

    One call per process wraps the SDK (later calls only turn ``stream_usage`` on). Afterwards
    each ``client.chat.completions.create(...)`` (``OpenAI`` and ``AsyncOpenAI``, streamed or
    not, ``chat.completions.stream`` and ``with_raw_response`` too) made inside a sample
    records a model call: the model, the tokens, the seconds until the response was read and
    the tools the model asked to call. A client with ``aeval.trace.httpx_event_hooks`` records
    each call once.

    A streamed completion reports its tokens only when its request sets
    ``stream_options={"include_usage": True}``; without it the call is recorded with its tokens
    unknown (``None``, never 0; a token budget then fails saying so). Asking for usage makes
    the server send one more chunk, with empty ``choices``, which code reading
    ``chunk.choices[0]`` would trip on, so it is your choice: set your framework's option for
    it (docs/agents.md names each), or pass ``stream_usage=True`` to have it added to every
    streamed request made inside a sample that does not set ``include_usage`` itself
    (requests outside a sample are never changed).

    A hand-written tool loop calls its own functions, which aeval cannot serve: the calls are
    read from the conversation (each ``tool`` message of a request and the assistant's
    ``tool_calls`` entry it answers) and recorded under the name the model called, unless
    ``@aeval.tool`` recorded them already (decorate them to have fixtures and replays serve
    them). Under ``tools="fixtures"`` or a replay a tool call seen only in the conversation
    ran live, so the row is an error (:class:`~aeval.UnmockedToolCall`), never a silent live
    call.

    Args:
        stream_usage: Add ``stream_options.include_usage`` to streamed requests made inside
            a sample, so that their tokens are recorded. Once on, on for the process.

    Raises:
        TypeError: ``stream_usage`` is not a bool.

    Example::

        from aeval.integrations import openai as aeval_openai

        aeval_openai.instrument()
    """
    if not isinstance(stream_usage, bool):
        raise TypeError(f"stream_usage must be True or False, got {stream_usage!r}")
    if stream_usage:
        _STREAM_USAGE.set()
    _wrap_sdk()


@once
def _wrap_sdk() -> None:
    _chat.Completions.create = _wrap_sync(_chat.Completions.create)  # type: ignore[method-assign]
    _chat.AsyncCompletions.create = _wrap_async(_chat.AsyncCompletions.create)  # type: ignore[method-assign]


def _asking_usage(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of a streamed request, asking for usage when ``stream_usage`` is on and the
    request says nothing of it."""
    if not _STREAM_USAGE.is_set() or kwargs.get("stream") is not True:
        return kwargs
    options = kwargs.get("stream_options")
    if isinstance(options, Mapping) and "include_usage" in options:
        return kwargs
    asked = dict(options) if isinstance(options, Mapping) else {}
    asked["include_usage"] = True
    return {**kwargs, "stream_options": asked}


def _wrap_sync(create: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(create)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder = RECORDER.get()
        if recorder is None:
            return create(self, *args, **kwargs)
        _conversation(recorder, kwargs.get("messages"))
        with model_route(_ROUTE) as records:
            if not records:
                return create(self, *args, **kwargs)
            kwargs = _asking_usage(kwargs)
            at, started = datetime.now(UTC), perf_counter()
            result = create(self, *args, **kwargs)
        _record(recorder, result, kwargs, at, started)
        return result

    return wrapper


def _wrap_async(create: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(create)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder = RECORDER.get()
        if recorder is None:
            return await create(self, *args, **kwargs)
        _conversation(recorder, kwargs.get("messages"))
        with model_route(_ROUTE) as records:
            if not records:
                return await create(self, *args, **kwargs)
            kwargs = _asking_usage(kwargs)
            at, started = datetime.now(UTC), perf_counter()
            result = await create(self, *args, **kwargs)
        _record(recorder, result, kwargs, at, started)
        return result

    return wrapper


def _record(
    recorder: Recorder, result: Any, kwargs: Mapping[str, Any], at: datetime, started: float
) -> None:
    """Record the call ``result`` answers: a stream when it has been read, a completion now.

    ``result`` is what ``create`` returned: a completion, a stream, or the raw response of
    ``with_raw_response`` / ``with_streaming_response`` (its body read or not), which is read
    here without changing what its caller parses from it.
    """
    recorder.note(_ANSWERED, time_ns())
    requested = kwargs.get("model")
    model = requested if isinstance(requested, str) else None
    raw = getattr(result, "http_response", None)
    completion: Any = result
    streamed = None
    if isinstance(result, openai.Stream | openai.AsyncStream):
        streamed = result.response
    elif raw is not None and kwargs.get("stream") is True:
        streamed = raw
    elif raw is not None:
        completion = _json(raw) if getattr(raw, "is_closed", False) else None
    if streamed is not None:
        from ..trace._stream import watch_stream

        watch_stream(streamed, recorder, orjson.dumps({"model": model}), started)
        return
    usage = _field(completion, "usage")
    reported = _field(completion, "model")
    names, ids = _requested(completion)
    record_model(
        model=reported if isinstance(reported, str) else model,
        prompt_tokens=_count(_field(usage, "prompt_tokens")),
        completion_tokens=_count(_field(usage, "completion_tokens")),
        duration=perf_counter() - started,
        requested_tools=names,
        tool_call_ids=ids,
        started=at,
        recorder=recorder,
    )


def _json(http: Any) -> Any:
    """The JSON body of a raw response that has been read (``None`` if it is not JSON)."""
    try:
        return orjson.loads(http.content)
    except (orjson.JSONDecodeError, TypeError):
        return None


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _requested(completion: Any) -> tuple[list[str], list[str]]:
    """The tools a completion asks to call and the ids of those calls, in its order."""
    names: list[str] = []
    ids: list[str] = []
    for choice in _items(_field(completion, "choices")):
        for call in _items(_field(_field(choice, "message"), "tool_calls")):
            name = _field(_field(call, "function"), "name")
            if isinstance(name, str) and name:
                names.append(name)
                identifier = _field(call, "id")
                if isinstance(identifier, str):
                    ids.append(identifier)
    return names, ids


def _items(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _field(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _conversation(recorder: Recorder, messages: Any) -> None:
    """Record the tool calls a request's ``tool`` messages answer, once each, unless a direct
    route (``@aeval.tool``) recorded tool calls since the previous model call answered."""
    now = time_ns()
    previous = recorder.note(_ANSWERED, None)
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        return
    asked: dict[str, tuple[str, Any]] = {}
    answers: list[tuple[str, Any]] = []
    for message in messages:
        role = _field(message, "role")
        if role == "assistant":
            for call in _field(message, "tool_calls") or ():
                function = _field(call, "function")
                identifier, name = _field(call, "id"), _field(function, "name")
                if isinstance(identifier, str) and isinstance(name, str) and name:
                    asked[identifier] = (name, _field(function, "arguments"))
        elif role == "tool":
            identifier = _field(message, "tool_call_id")
            if isinstance(identifier, str):
                answers.append((identifier, _field(message, "content")))
    fresh = [
        (identifier, content)
        for identifier, content in answers
        if identifier in asked and recorder.note((_ROUTE, "tool", identifier), True) is None
    ]
    if not fresh:
        return
    window = recorder.start()
    start = previous if isinstance(previous, int) else now
    if recorder.seen_by_a_route((window[0], start, None), now, tool=True):
        return
    for identifier, content in fresh:
        name, raw = asked[identifier]
        arguments = _arguments(raw)
        recorder.add_tool_call(recorder.start(), name, arguments, result=_content(content))
        if recorder.tools is not None:
            recorder.note_unmocked(
                UnmockedToolCall(
                    f"tool call {name} ran live under fixtures or a replay: a hand-written "
                    "tool loop calls its own functions, which aeval cannot serve; decorate "
                    "them with @aeval.tool (name= the name the model calls) so that fixtures "
                    "and replays serve them",
                    tool=name,
                    arguments=arguments,
                )
            )


def _arguments(raw: Any) -> Mapping[str, Any]:
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"arguments": raw}
    return raw if isinstance(raw, Mapping) else {"arguments": raw}


def _content(content: Any) -> Any:
    if isinstance(content, list):  # content parts
        return "".join(str(_field(part, "text") or "") for part in content)
    return content
