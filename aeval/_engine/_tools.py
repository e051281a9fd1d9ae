"""Where a run's ``@aeval.tool`` functions get their results: live, fixtures or a replay."""

from __future__ import annotations

from typing import Literal

from .._samples import EvaluationSample
from ..trace import Fixtures, Replay
from ..trace._context import ToolSource

__all__ = ["Tools", "check_tools", "describe_tools", "tool_source"]

Tools = Literal["live", "fixtures"] | Replay
"""Where ``@aeval.tool`` functions get their results in a run (``Scorer(tools=...)``)."""


def check_tools(tools: object) -> Tools:
    """``tools`` when it is a valid ``Scorer(tools=...)`` value.

    Raises:
        ValueError: It is neither ``"live"``, ``"fixtures"`` nor a ``Replay``.
    """
    if isinstance(tools, Replay) or tools in ("live", "fixtures"):
        return tools
    raise ValueError(
        f"tools must be 'live' (call the tools), 'fixtures' (serve each sample's tools: "
        f"fixtures) or aeval.trace.Replay(ref) (serve a stored run's results), got {tools!r}"
    )


def describe_tools(tools: Tools) -> str | None:
    """The run header's ``tools``: ``None`` for live tools, ``"fixtures"``, ``"replay:REF"``."""
    if isinstance(tools, Replay):
        return f"replay:{tools.ref}"
    return None if tools == "live" else tools


def tool_source(tools: Tools, sample: EvaluationSample, repeat: int) -> ToolSource | None:
    """What serves the tool calls of one (sample, repeat); ``None`` calls the tools.

    Raises:
        ValueError: ``tools="fixtures"`` and the sample's ``tools:`` are malformed (naming
            the sample and the entry).
    """
    if isinstance(tools, Replay):
        return tools.for_sample(sample.name, repeat)
    if tools == "fixtures":
        try:
            return Fixtures.from_sample(sample)
        except ValueError as exc:
            raise ValueError(f"sample {sample.name!r}: {exc}") from None
    return None
