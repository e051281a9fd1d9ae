"""The one way any route (``@aeval.tool``, a framework integration, the httpx hooks, the
OpenTelemetry span processor) records a tool or model call, serves a tool from fixtures or a
replay, and keeps a call that two routes see from being recorded twice.

Tool calls: the route nearest to the model (a framework's wrapper of its tools, which knows
the name the model called) records the call and marks it open in :data:`TOOL_CALL` while the
live function runs; the first route beneath it that sees the same call (``@aeval.tool`` on the
function the framework calls) claims the mark and records nothing. A call beneath it with an
argument the outer call also has but with another value is a different call (a helper the
tool calls) and is recorded. Under fixtures or a replay the outer route serves the call and the
function never runs.

Calls issued together: a framework runs the tool calls of one model reply at once, in tasks
that start in any order. The model route notes the reply's call ids in the order the model
gave them (:func:`record_model`'s ``tool_call_ids``), and a tool route that knows the id of
the call it records (``call_id``) records the call with its place in that reply, so the trace
holds the reply's calls in the model's order (``Recorder.snapshot``). A call whose id no
recorded reply gave keeps its place in start order.

Model calls: a route that records a model call as a whole (an SDK-level wrapper) marks it in
:data:`MODEL_CALL`; the httpx hooks record nothing while it is marked.

OpenTelemetry spans arrive after the fact (``Recorder.seen_by_a_route``): a span
that started while a route's call was open is that call, and a span whose time holds a call a
route recorded stands for it; either way the span is dropped, so a direct route always wins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Required, TypedDict, TypeVar

from .._exceptions import UnmockedToolCall
from ._chat import bounded_model_fields
from ._context import RECORDER, Pending, Recorder, started_at
from ._values import frozen_model_call

__all__ = [
    "MODEL_CALL",
    "TOOL_CALL",
    "ModelCallFields",
    "OpenCall",
    "call_tool",
    "call_tool_async",
    "claimed",
    "model_route",
    "record_model",
    "served",
]

_T = TypeVar("_T")
_ISSUED = "aeval.trace.issued"
"""Noted on a recorder with a tool call's id: the model reply that issued it and its place."""


class OpenCall:
    """A tool call a route is recording while its live function runs.

    Attributes:
        route: The route recording it (``"openai_agents"``, ...).
        name: The name the model called.
        arguments: The arguments the model gave.
        open: Whether no route beneath has claimed it yet.
    """

    __slots__ = ("arguments", "name", "open", "route")

    def __init__(self, route: str, name: str, arguments: Mapping[str, Any]) -> None:
        self.route = route
        self.name = name
        self.arguments = arguments
        self.open = True


TOOL_CALL: ContextVar[OpenCall | None] = ContextVar("aeval.trace.tool_call", default=None)
"""The tool call an outer route is recording here, if any."""
MODEL_CALL: ContextVar[str | None] = ContextVar("aeval.trace.model_call", default=None)
"""The route recording the model call in progress here (the httpx hooks then record nothing)."""


def claimed(call: OpenCall, arguments: Mapping[str, Any]) -> bool:
    """Whether a route beneath ``call`` that sees ``arguments`` sees ``call`` itself, and then
    claims it (the outer route records it; this one records nothing).

    It does unless an argument both name differs: a framework may pass the model's arguments
    converted (an object of them) or with the function's defaults added, so missing or extra
    names do not tell two calls apart.
    """
    if not call.open:
        return False
    outer = call.arguments
    for key, value in arguments.items():
        if key in outer and not _equal(outer[key], value):
            return False
    call.open = False
    return True


def _equal(left: Any, right: Any) -> bool:
    try:
        return bool(left == right)
    except Exception:
        return False


def served(
    recorder: Recorder,
    name: str,
    arguments: dict[str, Any],
    pending: Pending,
    *,
    call_id: str | None = None,
) -> Any:
    """The result the recorder's tool source serves for this call, recorded as mocked.

    A call nothing serves is noted on the recorder (the row is an error row naming the tool,
    even when the agent catches the error) and raises :class:`~aeval.UnmockedToolCall`.
    ``call_id`` is the call's id in the model's reply, when the route knows it.
    """
    assert recorder.tools is not None
    reply = _place(recorder, call_id)
    try:
        result = recorder.tools.serve(name, arguments)
    except UnmockedToolCall as error:
        recorder.note_unmocked(error)
        recorder.add_tool_call(pending, name, arguments, error=error, mocked=True, reply=reply)
        raise
    except BaseException as exc:
        recorder.add_tool_call(pending, name, arguments, error=exc, mocked=True, reply=reply)
        raise
    recorder.add_tool_call(pending, name, arguments, result=result, mocked=True, reply=reply)
    return result


def _place(recorder: Recorder, call_id: str | None) -> tuple[int, int] | None:
    """The model reply that issued the tool call ``call_id`` and the call's place in it, when
    a recorded reply with two calls or more gave that id (taken once: a later call with the
    same id keeps its place in start order)."""
    if call_id is None:
        return None
    place: tuple[int, int] | None = recorder.note((_ISSUED, call_id), None)
    return place


def _arguments(name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a tool's name must be a non-empty string, got {name!r}")
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        return {"arguments": arguments}
    return dict(arguments)


def call_tool(
    name: str,
    arguments: Mapping[str, Any] | None,
    live: Callable[[], _T],
    *,
    route: str,
    call_id: str | None = None,
) -> _T:
    """Make one tool call the way every route does, for a route that calls tools itself.

    Outside a sample ``live()`` is simply called. Under ``tools="fixtures"`` or a replay the
    call is served (recorded as mocked) and ``live`` is not called; a call nothing serves
    raises :class:`~aeval.UnmockedToolCall`. Otherwise ``live()`` runs with the call marked
    open (a route beneath records nothing) and its result or error is recorded under
    ``name``, the name the model called.

    Args:
        name: The name the model called.
        arguments: The arguments the model gave (a non-mapping is kept as ``arguments``).
        live: Runs the tool.
        route: Who records (an integration's name), for messages.
        call_id: The call's id in the model's reply (``tool_call_id``), when the route knows
            it: the calls of one reply are then in the trace in the reply's order, whichever
            started first.
    """
    recorder = RECORDER.get()
    if recorder is None:
        return live()
    kept = _arguments(name, arguments)
    outer = TOOL_CALL.get()
    if outer is not None and claimed(outer, kept):
        return live()
    pending = recorder.start()
    if recorder.tools is not None:
        return served(recorder, name, kept, pending, call_id=call_id)  # type: ignore[no-any-return]
    token = TOOL_CALL.set(OpenCall(route, name, kept))
    try:
        result = live()
    except BaseException as exc:
        recorder.add_tool_call(pending, name, kept, error=exc, reply=_place(recorder, call_id))
        raise
    finally:
        TOOL_CALL.reset(token)
    recorder.add_tool_call(pending, name, kept, result=result, reply=_place(recorder, call_id))
    return result


async def call_tool_async(
    name: str,
    arguments: Mapping[str, Any] | None,
    live: Callable[[], Awaitable[_T]],
    *,
    route: str,
    call_id: str | None = None,
) -> _T:
    """:func:`call_tool` for a tool that is awaited: ``live()`` returns its awaitable."""
    recorder = RECORDER.get()
    if recorder is None:
        return await live()
    kept = _arguments(name, arguments)
    outer = TOOL_CALL.get()
    if outer is not None and claimed(outer, kept):
        return await live()
    pending = recorder.start()
    if recorder.tools is not None:
        return served(recorder, name, kept, pending, call_id=call_id)  # type: ignore[no-any-return]
    token = TOOL_CALL.set(OpenCall(route, name, kept))
    try:
        result = await live()
    except BaseException as exc:
        recorder.add_tool_call(pending, name, kept, error=exc, reply=_place(recorder, call_id))
        raise
    finally:
        TOOL_CALL.reset(token)
    recorder.add_tool_call(pending, name, kept, result=result, reply=_place(recorder, call_id))
    return result


@contextlib.contextmanager
def model_route(route: str) -> Iterator[bool]:
    """Mark a model call that ``route`` records as a whole, while it is made.

    Yields whether ``route`` should record it: ``False`` outside a sample, or when an outer
    route already records this call (a wrapper around a wrapper). Meanwhile the httpx hooks
    record nothing here.
    """
    if RECORDER.get() is None or MODEL_CALL.get() is not None:
        yield False
        return
    token = MODEL_CALL.set(route)
    try:
        yield True
    finally:
        MODEL_CALL.reset(token)


class ModelCallFields(TypedDict, total=False):
    """What is known of one model call (see :func:`record_model`): only ``model`` is
    required."""

    model: Required[str | None]
    prompt_tokens: int | None
    completion_tokens: int | None
    duration: float | None
    requested_tools: Sequence[str]
    started: datetime | None


def record_model(
    *,
    model: str | None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    duration: float | None = None,
    requested_tools: Sequence[str] = (),
    tool_call_ids: Sequence[str] = (),
    started: datetime | None = None,
    recorder: Recorder | None = None,
) -> None:
    """Record one model call from a route (ignored outside a sample).

    Args:
        model: The model's name (as the server reported it, else as requested).
        prompt_tokens: Tokens of the prompt, when known.
        completion_tokens: Tokens of the completion, when known.
        duration: Seconds from the request to the (last byte of the) response.
        requested_tools: The tools the model asked to call, in its order.
        tool_call_ids: The ids of those calls, in the same order, when known: the tool
            routes that know a call's id record the calls of this reply in this order.
        started: When the request was sent; now when not given.
        recorder: The recorder to record into; the current one by default (a stream that
            ends in another context names the one it started in).
    """
    if recorder is None:
        recorder = RECORDER.get()
        if recorder is None:
            return
    pending = recorder.start(started)
    name, tools = bounded_model_fields(model, tuple(requested_tools), recorder.limits)
    recorder.add_model_call(
        pending,
        frozen_model_call(
            name, prompt_tokens, completion_tokens, duration, tools, started_at(pending)
        ),
    )
    if len(tool_call_ids) > 1:
        for place, call_id in enumerate(tool_call_ids):
            recorder.note((_ISSUED, call_id), (pending[0], place))
