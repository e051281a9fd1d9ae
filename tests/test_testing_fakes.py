from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from aeval import EvaluationSample
from aeval.abc import ChatModel, Embedder
from aeval.models import ChatMessage, ChatResponse, Embeddings, TokenUsage
from aeval.strategies import AiJudgeStrategy, SemanticSimilarityStrategy
from aeval.testing import (
    ChatCall,
    FakeChatModel,
    FakeEmbedder,
    hashed_embedding,
)

pytestmark = pytest.mark.anyio

SAMPLE = EvaluationSample("capital", ["What is the capital of France?"], "Paris")
USER = [ChatMessage("user", "Is it right?")]


# --- FakeChatModel --------------------------------------------------------------------------


async def test_the_chat_fake_is_a_chat_model_usable_with_async_with() -> None:
    async with FakeChatModel() as model:
        assert isinstance(model, ChatModel)
        await model.aclose()
    assert (model.model, repr(model)) == (
        "fake-chat-model",
        "FakeChatModel(model='fake-chat-model', calls=0)",
    )


async def test_string_replies_carry_the_usage_retries_and_model_name() -> None:
    model = FakeChatModel(["true", "false"], model="judge", usage=TokenUsage(9, 1), retries=2)
    first = await model.chat(USER)
    second = await model.chat("Is it wrong?", json_mode=True)
    assert first == ChatResponse("true", TokenUsage(9, 1), "judge", 2)
    assert second.text == "false"
    assert model.calls == [
        ChatCall((ChatMessage("user", "Is it right?"),), False),
        ChatCall((ChatMessage("user", "Is it wrong?"),), True),
    ]


async def test_responses_are_returned_as_is_and_exceptions_raised() -> None:
    answered = ChatResponse("true", TokenUsage(1, 1), "other-model", 1, {"id": "x"})
    down = ConnectionError("judge down")
    model = FakeChatModel([answered, down], usage=TokenUsage(50, 50))
    assert await model.chat(USER) is answered
    with pytest.raises(ConnectionError) as caught:
        await model.chat(USER)
    assert caught.value is down
    assert len(model.calls) == 2


async def test_running_out_of_replies_says_so() -> None:
    model = FakeChatModel(["only one"], model="judge")
    await model.chat(USER)
    with pytest.raises(LookupError) as caught:
        await model.chat(USER)
    assert str(caught.value) == (
        "FakeChatModel 'judge' has no scripted reply left for call 2: script more replies or "
        "pass a function"
    )


async def test_a_function_decides_each_reply_and_may_be_async() -> None:
    def by_prompt(call: ChatCall) -> str | ChatResponse | Exception:
        if call.json_mode:
            return ChatResponse('{"score": 1}')
        return "true" if "Paris" in call.messages[-1].content else ValueError("no city")

    model = FakeChatModel(by_prompt)
    assert (await model.chat("Paris?")).text == "true"
    assert (await model.chat("x", json_mode=True)).text == '{"score": 1}'
    with pytest.raises(ValueError, match="no city"):
        await model.chat("Lyon?")

    gate = anyio.Event()

    async def gated(call: ChatCall) -> str:
        await gate.wait()
        return "after the gate"

    held = FakeChatModel(gated)
    replies: list[str] = []

    async def ask() -> None:
        replies.append((await held.chat(USER)).text)

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        assert (len(held.calls), replies) == (1, [])
        gate.set()
    assert replies == ["after the gate"]


async def test_an_ai_judge_runs_on_the_fake() -> None:
    judge = FakeChatModel(["true", "false"], model="judge", usage=TokenUsage(10, 1))
    strategy = AiJudgeStrategy(judge)
    passed = await strategy.evaluate(SAMPLE, "Paris")
    failed = await strategy.evaluate(SAMPLE, "Lyon")
    assert (passed.passed, failed.passed) == (True, False)
    assert (passed.metadata["judge_model"], passed.metadata["prompt_tokens"]) == ("judge", 10)
    assert "Lyon" in judge.calls[1].messages[0].content


# --- FakeEmbedder ---------------------------------------------------------------------------


async def test_the_embedder_fake_is_an_embedder_hashing_texts_by_default() -> None:
    async with FakeEmbedder(dimensions=16) as embedder:
        assert isinstance(embedder, Embedder)
        result = await embedder.embed(["a cat", "a dog"])
    assert result == Embeddings(
        [hashed_embedding("a cat", 16), hashed_embedding("a dog", 16)],
        TokenUsage(),
        "fake-embedder",
        0,
    )
    assert [call.texts for call in embedder.calls] == [("a cat", "a dog")]
    assert repr(embedder) == "FakeEmbedder(model='fake-embedder', calls=1)"


async def test_vectors_come_from_a_mapping_with_usage_and_retries() -> None:
    down = ConnectionError("embedder down")
    embedder = FakeEmbedder(
        {"x": [1.0, 0.0], "y": [0.0, 1.0], "boom": down},
        model="embed",
        usage=TokenUsage(7, 0),
        retries=1,
    )
    assert await embedder.embed(["y", "x"]) == Embeddings(
        [[0.0, 1.0], [1.0, 0.0]], TokenUsage(7, 0), "embed", 1
    )
    assert (await embedder.embed("x")).vectors == [[1.0, 0.0]]
    with pytest.raises(ConnectionError) as caught:
        await embedder.embed(["x", "boom"])
    assert caught.value is down
    with pytest.raises(LookupError) as missing:
        await embedder.embed(["z"])
    assert str(missing.value) == (
        "FakeEmbedder 'embed' has no vector for 'z': add it to vectors or pass a function"
    )
    assert [call.texts for call in embedder.calls] == [("y", "x"), ("x",), ("x", "boom"), ("z",)]


async def test_vectors_come_from_a_function_that_may_be_async() -> None:
    def length(text: str) -> list[float]:
        return [float(len(text)), 1.0]

    assert (await FakeEmbedder(length).embed(["ab"])).vectors == [[2.0, 1.0]]

    async def slow_length(text: str) -> list[float]:
        await anyio.lowlevel.checkpoint()
        return length(text)

    assert (await FakeEmbedder(slow_length).embed(["abc"])).vectors == [[3.0, 1.0]]


async def test_semantic_similarity_runs_on_the_fake() -> None:
    embedder = FakeEmbedder({"Paris": [1.0, 0.0], "It is Paris": [0.8, 0.6]})
    result = await SemanticSimilarityStrategy(0.8, embedder=embedder).evaluate(
        SAMPLE, "It is Paris"
    )
    assert (result.passed, result.score, result.metadata["embedding_model"]) == (
        True,
        0.8,
        "fake-embedder",
    )
