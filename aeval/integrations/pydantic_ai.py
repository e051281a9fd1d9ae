"""Trace, mock and replay agents built with pydantic-ai (``pydantic-ai-slim``).

After :func:`instrument` (once per process) every tool call of a ``pydantic_ai.Agent`` run is
recorded in the trace of the sample running it, under the name the model called (a
``tool_plain(name=...)`` name, a prefixed toolset's name), with its validated arguments and
result; under ``tools="fixtures"`` or a replay the tool is served and never runs. The model
calls pydantic-ai makes with the ``openai`` client are recorded by
:mod:`aeval.integrations.openai`, which :func:`instrument` sets up too.

Example:
    >>> from aeval.integrations import pydantic_ai
    >>> pydantic_ai.instrument()
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..trace._route import call_tool_async
from . import openai as _openai
from ._once import once

__all__ = ["AevalTools", "instrument"]

_ROUTE = "pydantic_ai"


@dataclass
class _Served(WrapperToolset[Any]):
    """The agent's toolset with each call through aeval: served under fixtures or a replay,
    else run and recorded under the name the model called. A served error is raised where
    the tool would raise it, so the agent's own error handling (``on_tool_execute_error``
    hooks) sees it as the tool's."""

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        call = self.wrapped.call_tool
        return await call_tool_async(
            name,
            tool_args,
            lambda: call(name, tool_args, ctx, tool),
            route=_ROUTE,
            call_id=ctx.tool_call_id,
        )


class AevalTools(AbstractCapability[Any]):
    """The capability :func:`instrument` adds to every run: the agent's tools go through
    aeval (served under fixtures or a replay, else run and recorded).

    Add it yourself (``Agent(..., capabilities=[AevalTools()])``) to trace one agent only,
    without :func:`instrument`.
    """

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        """The agent's toolset, each call through aeval."""
        return _Served(toolset)


def _has_aeval(capabilities: Sequence[Any] | None) -> bool:
    return any(isinstance(capability, AevalTools) for capability in capabilities or ())


@once
def instrument() -> None:
    """Record, mock and replay every pydantic-ai tool call and model call.

    Idempotent. Each run of any ``Agent`` gets the :class:`AevalTools` capability.

    Where: capabilities are pydantic-ai's extension point for tool execution (one may wrap
    the agent's toolset, whose ``call_tool`` runs each tool), but they are given per agent
    or per run, and ``Agent.instrument_all`` only turns on OpenTelemetry spans (which cannot
    serve a result). So this wraps the public ``Agent.iter``, which ``run``, ``run_sync``,
    ``run_stream`` and ``run_stream_events`` all go through, to add the capability to the
    run's ``capabilities``.
    """
    _openai.instrument()
    iterate = Agent.iter

    @functools.wraps(iterate)
    def iter_(self: Agent[Any, Any], *args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("capabilities")
        if not _has_aeval(given):
            kwargs["capabilities"] = [*(given or ()), AevalTools()]
        return iterate(self, *args, **kwargs)

    Agent.iter = iter_  # type: ignore[method-assign]
