"""Issue 12 §1 at the model layer: what local servers (llama.cpp, Ollama, vLLM) do, played by
``aeval.testing``'s server over real sockets: token limits and ``finish_reason``, a model
that does not stop, a one-slot server that keeps generating for a client that left, and
embeddings with one vector per token."""

from __future__ import annotations

import logging
import math
from typing import Any

import anyio
import pytest

from aeval import ModelResponseError, ModelTimeoutError
from aeval.models import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    OpenAIChatModel,
    OpenAIEmbedder,
)
from aeval.strategies import AiJudgeStrategy
from aeval.testing import (
    FakeChatModel,
    FakeClock,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    hashed_embedding,
)

pytestmark = pytest.mark.anyio

USER = [ChatMessage("user", "Is it right?")]


def chat_model(server: OpenAICompatibleServer, **options: Any) -> OpenAIChatModel:
    settings: dict[str, Any] = {"backoff": 0.01, "timeout": 5.0, "clock": FakeClock()}
    settings.update(options)
    return OpenAIChatModel("judge-1", base_url=server.base_url, **settings)


# --- options ---------------------------------------------------------------------------------


async def test_options_of_a_call_win_over_the_clients_and_are_sent() -> None:
    async with OpenAICompatibleServer(["true", "true"]) as server:
        async with chat_model(server, max_tokens=100, seed=7, stop="END") as model:
            await model.chat(USER)
            reply = await model.chat(
                USER, options=ChatOptions(max_tokens=8, temperature=0.5, stop=["\n", "."])
            )
        first, second = (request.json for request in server.requests)
    assert {k: first[k] for k in ("temperature", "max_tokens", "seed", "stop")} == {
        "temperature": 0.0,
        "max_tokens": 100,
        "seed": 7,
        "stop": ["END"],
    }
    assert {k: second[k] for k in ("temperature", "max_tokens", "seed", "stop")} == {
        "temperature": 0.5,
        "max_tokens": 8,
        "seed": 7,
        "stop": ["\n", "."],
    }
    assert reply.metadata["max_tokens"] == 8


def test_chat_options_are_checked() -> None:
    with pytest.raises(ValueError, match="max_tokens must be a positive integer, got 0"):
        ChatOptions(max_tokens=0)
    with pytest.raises(ValueError, match="temperature must be 0 or more, got -1"):
        ChatOptions(temperature=-1)
    with pytest.raises(TypeError, match="seed must be an integer, got '1'"):
        ChatOptions(seed="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stop must be a non-empty text or list of texts"):
        ChatOptions(stop=[""])
    assert ChatOptions(stop="x").stop == ("x",)
    assert ChatOptions(max_tokens=5).merged(ChatOptions(seed=1)) == ChatOptions(
        max_tokens=5, seed=1
    )


def test_which_chat_models_accept_options(caplog: pytest.LogCaptureFixture) -> None:
    """A judge sends its options to a model whose chat() takes ``options=`` (or ``**kwargs``)
    and warns that a model without it cannot receive them."""

    class Old:
        async def chat(self, messages: Any, *, json_mode: bool = False) -> ChatResponse:
            return ChatResponse("true")

    class Open:
        async def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            return ChatResponse("true")

    def refused(model: Any) -> bool:
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            AiJudgeStrategy(model, max_tokens=5)
        return any("takes no options=" in record.getMessage() for record in caplog.records)

    assert not refused(OpenAIChatModel("m"))
    assert not refused(FakeChatModel())
    assert not refused(Open())
    assert refused(Old())


# --- token limits ----------------------------------------------------------------------------


async def test_the_server_cuts_a_reply_at_max_tokens_and_says_length() -> None:
    long = '{"score": 85, "passed": true, "explanation": "The response names the right city"}'
    async with OpenAICompatibleServer([long, long]) as server, chat_model(server) as model:
        cut = await model.chat(USER, options=ChatOptions(max_tokens=4))
        whole = await model.chat(USER, options=ChatOptions(max_tokens=64))
    assert (cut.text, cut.metadata["finish_reason"]) == ('{"score": 85, "passed": true,', "length")
    assert cut.usage.completion_tokens == 4
    assert (whole.text, whole.metadata["finish_reason"]) == (long, "stop")


async def test_a_model_that_does_not_stop_runs_to_the_context_without_max_tokens() -> None:
    rambling = Reply.rambling("yes and", context_tokens=50)
    async with OpenAICompatibleServer(default=rambling) as server, chat_model(server) as model:
        endless = await model.chat(USER)
        bounded = await model.chat(USER, options=ChatOptions(max_tokens=3))
    assert endless.text.split() == ["yes", "and"] * 25
    assert (endless.metadata["finish_reason"], endless.usage.completion_tokens) == ("length", 50)
    assert (bounded.text, bounded.metadata["finish_reason"]) == ("yes and yes", "length")


# --- a one-slot server and read timeouts ----------------------------------------------------


async def test_a_one_slot_server_finishes_an_abandoned_reply_before_the_next() -> None:
    async with OpenAICompatibleServer([Reply.slow(0.3, "late"), "next"], slots=1) as server:
        async with chat_model(server, timeout=0.05, max_attempts=1) as impatient:
            with pytest.raises(ModelTimeoutError):
                await impatient.chat(USER)
        async with chat_model(server) as patient:
            reply = await patient.chat(USER)
        generated = server.generated
    # the second request waited for the slot of the abandoned first one
    assert (reply.text, generated) == ("next", 2)


async def test_a_read_timeout_is_retried_once_by_default() -> None:
    # the timeout bounds connecting too: long enough that a loaded machine still connects
    # within it, so that each attempt is a read timeout
    async with OpenAICompatibleServer(default=Reply.slow(30)) as server:
        async with chat_model(server, timeout=0.5) as model:
            with pytest.raises(ModelTimeoutError) as caught:
                await model.chat(USER)
        assert await anyio.to_thread.run_sync(server.wait_for_requests, 2)
        requests = len(server.requests)
    assert requests == 2
    assert caught.value.retries == 1 and caught.value.read_timeout
    assert str(caught.value).endswith(
        "(after 2 attempts); not retried: read timeouts are retried 1 time at most "
        "(read_timeout_retries), as the server may still be working on the request"
    )


async def test_a_read_timeout_is_not_retried_when_no_attempt_fits_before_the_deadline() -> None:
    clock = FakeClock()

    def busy(request: RecordedRequest) -> Reply:
        # the server took 100 s of the client's clock (no deadline expires at 100)
        clock.advance(100)
        return Reply.slow(30)

    async with OpenAICompatibleServer(handler=busy) as server:
        async with chat_model(
            server, timeout=0.1, deadline=100.05, read_timeout_retries=5, clock=clock
        ) as model:
            with pytest.raises(ModelTimeoutError) as caught:
                await model.chat(USER)
        requests = len(server.requests)
    assert requests == 1
    assert str(caught.value).endswith(
        "not retried: a new attempt could not take its 0.1 s before the 100.05 s deadline, "
        "and the server may still be working on the request"
    )


async def test_connection_failures_are_still_retried_to_max_attempts() -> None:
    with OpenAICompatibleServer() as server:
        base_url = server.base_url
    model = OpenAIChatModel("m", base_url=base_url, max_attempts=3, clock=FakeClock())
    with pytest.raises(Exception, match=r"after 3 attempts\)$") as caught:
        await model.chat(USER)
    assert getattr(caught.value, "retries", None) == 2


def test_read_timeout_retries_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="read_timeout_retries must be 0 or more, got -1"):
        OpenAIChatModel("m", read_timeout_retries=-1)


# --- per-token embeddings -------------------------------------------------------------------


async def test_per_token_embeddings_are_refused_with_the_fix() -> None:
    async with OpenAICompatibleServer(dimensions=8) as server:
        server.enqueue_embeddings(Reply.token_embeddings())
        base_url = server.base_url
        async with OpenAIEmbedder("emb", base_url=base_url) as embedder:
            with pytest.raises(ModelResponseError) as caught:
                await embedder.embed(["a cat sat"])
    assert str(caught.value).startswith(
        f"embeddings reply from {base_url}/embeddings has one vector per token (3 "
        "vectors of 8) for a text, not one per text: the server does not pool its embeddings "
        "(llama.cpp's server started without --pooling, or with --pooling none). Start it "
        "with --pooling mean (or cls, last), or pass pooling='mean' to average the token "
        "vectors: "
    )


async def test_mean_pooling_averages_the_token_vectors() -> None:
    async with OpenAICompatibleServer(dimensions=8) as server:
        server.enqueue_embeddings(Reply.token_embeddings())
        async with OpenAIEmbedder("emb", base_url=server.base_url, pooling="mean") as embedder:
            result = await embedder.embed(["a cat", "dog"])
    words = [hashed_embedding(word, 8) for word in ("a", "cat")]
    expected = [(x + y) / 2 for x, y in zip(*words, strict=True)]
    assert result.vectors[0] == pytest.approx(expected)
    assert result.vectors[1] == pytest.approx(hashed_embedding("dog", 8))
    assert math.isclose(sum(x * x for x in result.vectors[1]), 1.0)


def test_pooling_takes_mean_or_none() -> None:
    with pytest.raises(ValueError, match="pooling must be 'mean' or None, got 'max'"):
        OpenAIEmbedder("emb", pooling="max")  # type: ignore[arg-type]


async def test_an_embedding_batch_that_fails_carries_every_batchs_retries() -> None:
    seen: dict[str, int] = {}

    def by_text(request: RecordedRequest) -> Reply:
        [text] = request.json["input"]
        seen[text] = seen.get(text, 0) + 1
        if text == "bad" or (text == "flaky" and seen[text] == 1):
            return Reply.server_error(503)
        return Reply()

    async with OpenAICompatibleServer(handler=by_text) as server:
        embedder = OpenAIEmbedder(
            "emb", base_url=server.base_url, batch_size=1, backoff=0.01, clock=FakeClock()
        )
        async with embedder:
            with pytest.raises(Exception, match="HTTP 503") as caught:
                await embedder.embed(["flaky", "bad"])
            retries = embedder.statistics().retries
    assert getattr(caught.value, "retries", None) == retries == 4


# --- what local servers answer when the context is too small -------------------------------


async def test_a_prompt_too_long_for_the_context_says_how_to_fix_it() -> None:
    too_long = Reply.error(
        400,
        "This model's maximum context length is 256 tokens. However, you requested 830 tokens",
    )
    async with OpenAICompatibleServer([too_long]) as server, chat_model(server) as model:
        with pytest.raises(Exception, match="HTTP 400") as caught:
            await model.chat(USER)
    assert "the prompt and max_tokens do not fit the model's context: start the server with a " in (
        str(caught.value)
    )
    assert len(server.requests) == 1


async def test_a_reply_that_filled_llama_cpps_context_says_to_set_max_tokens() -> None:
    full = Reply.error(500, "llama_decode returned 1")
    async with (
        OpenAICompatibleServer(default=full) as server,
        chat_model(server, max_attempts=2) as model,
    ):
        with pytest.raises(Exception, match="HTTP 500") as caught:
            await model.chat(USER)
    assert "usually because the reply filled the context: set max_tokens" in str(caught.value)
