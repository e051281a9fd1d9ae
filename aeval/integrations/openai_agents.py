"""Trace, mock and replay agents built with the OpenAI Agents SDK (``openai-agents``).

After :func:`instrument` (once per process) every function tool an ``agents.Agent`` calls is
recorded in the trace of the sample running it, under the name the model called (a
``function_tool(..., name_override=...)`` name), with its arguments and result; under
``tools="fixtures"`` or a replay the tool is served and never runs. The SDK's model calls
(made with the ``openai`` client) are recorded by :mod:`aeval.integrations.openai`, which
:func:`instrument` sets up too.

Example:
    >>> from aeval.integrations import openai_agents
    >>> openai_agents.instrument()
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from agents import Agent, FunctionTool, RunContextWrapper, Tool
from agents.tool import maybe_invoke_function_tool_failure_error_function
from agents.tool_context import ToolContext

from .._exceptions import ToolError, UnmockedToolCall
from ..trace._route import call_tool_async
from . import openai as _openai
from ._once import once

__all__ = ["instrument"]

_ROUTE = "openai_agents"

Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


class _Invoker:
    """A function tool's ``on_invoke_tool``, through aeval: the tool is served under fixtures
    or a replay, else run and recorded under the name the model called.

    A result served as an error (a fixture's ``error:``) reaches the model the way the tool's
    own failure would, through the tool's ``failure_error_function``; an unserved call raises
    :class:`~aeval.UnmockedToolCall`, which the Scorer reports as an error row naming the tool.
    """

    __slots__ = ("inner", "tool")

    def __init__(self, tool: FunctionTool, inner: Invoke) -> None:
        self.tool = tool
        self.inner = inner

    async def __call__(self, context: ToolContext[Any], raw: str) -> Any:
        name = getattr(context, "tool_name", None) or self.tool.name
        call_id = getattr(context, "tool_call_id", None)
        try:
            return await call_tool_async(
                name,
                _arguments(raw),
                lambda: self.inner(context, raw),
                route=_ROUTE,
                call_id=call_id if isinstance(call_id, str) else None,
            )
        except UnmockedToolCall:
            raise
        except ToolError as error:
            handled = await maybe_invoke_function_tool_failure_error_function(
                function_tool=self.tool, context=context, error=error
            )
            if handled is None:
                raise
            return handled

    def __agents_bind_function_tool__(self, tool: FunctionTool) -> _Invoker:
        """The SDK's hook when it copies a tool: the copy invokes through aeval too."""
        bind = getattr(self.inner, "__agents_bind_function_tool__", None)
        inner = bind(tool) if callable(bind) else self.inner
        return _Invoker(tool, inner)


def _arguments(raw: str) -> Any:
    """The model's arguments, parsed (kept as the raw text when they are not JSON)."""
    if not raw:
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"arguments": raw}


def _through_aeval(tools: list[Tool]) -> list[Tool]:
    for tool in tools:
        if isinstance(tool, FunctionTool) and not isinstance(tool.on_invoke_tool, _Invoker):
            tool.on_invoke_tool = _Invoker(tool, tool.on_invoke_tool)
    return tools


@once
def instrument() -> None:
    """Record, mock and replay every OpenAI Agents SDK function tool and model call.

    Idempotent. Function tools are wrapped the first time an agent lists them, so tools made
    before or after this call are covered alike.

    Where: the SDK's extension points cannot serve a tool's result instead of running it
    (tracing processors and ``RunHooks`` only observe, and tool guardrails are per tool and
    answer with a rejection message), so this wraps the public ``Agent.get_all_tools`` (the
    list of tools every turn of ``Runner.run`` reads) to route each ``FunctionTool``'s public
    ``on_invoke_tool`` through aeval. A ``needs_approval`` policy that is a function then
    sees the tool's arguments unprepared (the SDK asks for approval when it cannot prepare
    them itself).
    """
    _openai.instrument()
    listed = Agent.get_all_tools

    @functools.wraps(listed)
    async def get_all_tools(self: Agent[Any], run_context: RunContextWrapper[Any]) -> list[Tool]:
        return _through_aeval(await listed(self, run_context))

    Agent.get_all_tools = get_all_tools  # type: ignore[method-assign,assignment]
