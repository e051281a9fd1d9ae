"""The test server streams chat completions as OpenAI does: the openai SDK's own stream parser
reads them (the reference for the shapes)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aeval.testing import OpenAICompatibleServer, Reply

openai = pytest.importorskip("openai", reason="the openai SDK is the reference: pip install openai")

pytestmark = pytest.mark.anyio

MESSAGES: Any = [{"role": "user", "content": "weather in Mysore and Ooty please"}]


async def test_a_streamed_text_reply_parses_with_the_sdk_and_reports_usage() -> None:
    async with OpenAICompatibleServer(["sunny and warm today"]) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
        stream = await client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "sunny and warm today"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (6, 4)
    assert all(c.usage is None for c in chunks[:-1])
    assert server.requests[0].json["stream"] is True


async def test_a_stream_without_include_usage_has_no_usage_chunk() -> None:
    async with OpenAICompatibleServer(["hi there"]) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        chunks = [chunk async for chunk in stream]
        await client.close()
    assert all(c.choices and c.usage is None for c in chunks)


async def test_scripted_tool_calls_stream_as_the_sdk_assembles_them() -> None:
    calling = Reply.calling(
        ("get_weather", {"city": "Mysore", "unit": "celsius"}), ("get_weather", {"city": "Ooty"})
    )
    async with OpenAICompatibleServer([calling, calling]) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
        whole = await client.chat.completions.create(model="m", messages=MESSAGES)
        async with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
            async for _ in stream:
                pass
            streamed = await stream.get_final_completion()
        await client.close()
    for completion in (whole, streamed):
        (choice,) = completion.choices
        assert choice.finish_reason == "tool_calls"
        calls = choice.message.tool_calls or []
        assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
            (calls[0].id, "get_weather", {"city": "Mysore", "unit": "celsius"}),
            (calls[1].id, "get_weather", {"city": "Ooty"}),
        ]
    assert whole.choices[0].message.tool_calls is not None
    assert streamed.choices[0].message.tool_calls is not None
    assert [c.id for c in whole.choices[0].message.tool_calls] == ["call_1_0", "call_1_1"]
    assert [c.id for c in streamed.choices[0].message.tool_calls] == ["call_2_0", "call_2_1"]


def test_the_sync_client_streams_too() -> None:
    with OpenAICompatibleServer([Reply.calling(("book", {"hotel": "Lalitha Mahal"}))]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        fragments: list[str] = []
        names: list[str] = []
        for chunk in client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
            for call in chunk.choices[0].delta.tool_calls or ():
                if call.function is not None and call.function.name:
                    names.append(call.function.name)
                if call.function is not None and call.function.arguments:
                    fragments.append(call.function.arguments)
        client.close()
    assert names == ["book"]
    assert len(fragments) > 1
    assert json.loads("".join(fragments)) == {"hotel": "Lalitha Mahal"}
