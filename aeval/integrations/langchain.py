"""Trace, mock and replay agents built with LangChain or LangGraph.

After :func:`instrument` (once per process) every call of a LangChain tool (``@tool``, a
``StructuredTool``, any ``BaseTool``), from a LangChain 1.x ``create_agent``, a LangGraph
``ToolNode`` or your own loop, is recorded in the trace of the sample running it, under the
tool's name (the name the model called: ``@tool("get_weather")``), with its arguments and
result; under ``tools="fixtures"`` or a replay the tool is served and never runs. The model
calls of ``langchain-openai``'s ``ChatOpenAI`` (the ``openai`` client) are recorded by
:mod:`aeval.integrations.openai`, which :func:`instrument` sets up too, and the calls of one
model reply, which a ``ToolNode`` runs at once, are in the trace in the model's order.

Example:
    >>> from aeval.integrations import langchain
    >>> langchain.instrument()
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from ..trace._route import call_tool, call_tool_async
from . import openai as _openai
from ._once import once

__all__ = ["instrument"]

_ROUTE = "langchain"


def _arguments(tool: BaseTool, tool_input: str | dict[str, Any]) -> dict[str, Any]:
    """The arguments the model gave: the tool's input less what the graph injects (state,
    store, runtime), which the tool's call schema leaves out."""
    if not isinstance(tool_input, Mapping):
        return {"input": tool_input}
    schema = tool.tool_call_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        fields = schema.model_fields
        return {key: value for key, value in tool_input.items() if key in fields}
    return dict(tool_input)


def _content(output: Any) -> Any:
    return output.content if isinstance(output, ToolMessage) else output


def _output(tool: BaseTool, result: Any, tool_call_id: str | None) -> Any:
    """A served result as the tool returns it: a ``ToolMessage`` for a model's tool call."""
    if tool_call_id is None:
        return result
    content = result if isinstance(result, str | list) else str(result)
    return ToolMessage(content, tool_call_id=tool_call_id, name=tool.name, status="success")


@once
def instrument() -> None:
    """Record, mock and replay every LangChain tool call and ``ChatOpenAI`` model call.

    Idempotent.

    Where: LangChain's callback handlers only observe a tool call, and agent middleware
    (``wrap_tool_call``) is given per agent; neither serves a result to every tool. So this
    wraps the public ``BaseTool.run`` and ``BaseTool.arun`` (what ``invoke``/``ainvoke``,
    ``ToolNode`` and ``create_agent`` call) to serve the call or run and record it.
    """
    _openai.instrument()
    run, arun = BaseTool.run, BaseTool.arun

    @functools.wraps(run)
    def run_(self: BaseTool, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        made: list[Any] = []

        def live() -> Any:
            made.append(run(self, tool_input, *args, **kwargs))
            return _content(made[0])

        call_id = kwargs.get("tool_call_id")
        arguments = _arguments(self, tool_input)
        result = call_tool(self.name, arguments, live, route=_ROUTE, call_id=call_id)
        return made[0] if made else _output(self, result, call_id)

    @functools.wraps(arun)
    async def arun_(
        self: BaseTool, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        made: list[Any] = []

        async def live() -> Any:
            made.append(await arun(self, tool_input, *args, **kwargs))
            return _content(made[0])

        call_id = kwargs.get("tool_call_id")
        arguments = _arguments(self, tool_input)
        result = await call_tool_async(self.name, arguments, live, route=_ROUTE, call_id=call_id)
        return made[0] if made else _output(self, result, call_id)

    BaseTool.run = run_  # type: ignore[method-assign]
    BaseTool.arun = arun_  # type: ignore[method-assign]
