"""Seed 003's travel agent on the ``openai`` SDK with a hand-written tool loop, evaluated with
``aeval.integrations.openai.instrument()``.

Run: ``pip install 'aeval-engine[openai]'`` then ``python examples/travel_openai.py``.

The agent is written as the SDK's docs write a tool loop: ``AsyncOpenAI``'s
``chat.completions.create`` with ``tools=``, the tools the model asks for run by the loop, their
results sent back as ``tool`` messages. ``instrument()`` records every model call (model,
tokens, duration, the tools it asked for) in the trace of the sample making it, with no hooks
on the client. The loop calls its own functions, which aeval can only serve when they are
``@aeval.tool`` functions under the name the model calls: here they are ``travel_agent.py``'s,
so ``Scorer(tools="fixtures")`` serves them from ``travel.yaml`` (they have no live API: a
live call would fail). An undecorated function would be recorded from the conversation, and
under fixtures its row would be an ``UnmockedToolCall`` error, never a silent live call.

Offline: the model is the scripted ``travel_model`` of ``travel_agent.py`` on
``aeval.testing``'s OpenAI-compatible server on 127.0.0.1. ``STREAM=1`` streams each reply
(``stream=True``); ``instrument(stream_usage=True)`` asks a stream for its usage inside the
samples, so the streamed run records the same tokens.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
from openai import AsyncOpenAI
from travel_agent import MAX_STEPS, MODEL, SYSTEM, TOOL_SPECS, TOOLS, framework_checks, travel_model

from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.integrations import openai as aeval_openai
from aeval.testing import OpenAICompatibleServer

HERE = Path(__file__).parent

aeval_openai.instrument(stream_usage=True)


async def _reply(client: AsyncOpenAI, messages: list[Any], *, stream: bool) -> dict[str, Any]:
    """The model's next message: its content and the tool calls it asks for."""
    if not stream:
        reply = await client.chat.completions.create(
            model=MODEL, messages=messages, tools=TOOL_SPECS
        )
        return reply.choices[0].message.model_dump(exclude_none=True)
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    async for chunk in await client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOL_SPECS, stream=True
    ):
        for choice in chunk.choices:  # the usage chunk has none
            content.append(choice.delta.content or "")
            for delta in choice.delta.tool_calls or ():
                call = calls.setdefault(
                    delta.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] += delta.id or ""
                if delta.function is not None:
                    call["function"]["name"] += delta.function.name or ""
                    call["function"]["arguments"] += delta.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message


async def _run(call: dict[str, Any]) -> str:
    tool = TOOLS.get(call["function"]["name"])
    if tool is None:
        return f"error: no tool named {call['function']['name']!r}"
    try:
        return str(await tool(**orjson.loads(call["function"]["arguments"])))
    except Exception as error:  # the model reads the failure, as a real agent's would
        return f"error: {type(error).__name__}: {error}"


async def travel_agent(client: AsyncOpenAI, question: str, *, stream: bool = False) -> str:
    """Answer ``question``, running the tools the model asks for."""
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question},
    ]
    for _ in range(MAX_STEPS):
        message = await _reply(client, messages, stream=stream)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        for call in message["tool_calls"]:
            result = await _run(call)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return "Sorry, I could not finish planning that."


async def main(*, stream: bool = False) -> EvaluationReport:
    """Evaluate the agent on ``travel.yaml`` with fixtures, 8 samples at a time."""
    samples = await Samples.load(HERE / "travel.yaml")
    async with (
        OpenAICompatibleServer(handler=travel_model, model=MODEL) as server,
        AsyncOpenAI(base_url=server.base_url, api_key="not-needed-locally") as client,
        Scorer(concurrency=8, timeout=30, tools="fixtures") as scorer,
    ):

        async def chat(question: str) -> str:
            return await travel_agent(client, question, stream=stream)

        report = await scorer.evaluate(
            samples,
            chat,
            *framework_checks(max_tokens=400),
        )
    report.print()
    assert_that(report).has_score_greater_than(99)
    return report


if __name__ == "__main__":
    anyio.run(lambda: main(stream=os.environ.get("STREAM") == "1"))
    sys.exit(0)
