"""Issue 12 §1 at the judge: token limits, cut-off replies, readable scores with an odd
``passed``, re-asks that can help, a cache that lets a new run recover, retries counted."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from aeval import EvaluationSample, JudgeCache, Outcome, Scorer
from aeval.models import ChatMessage, ChatOptions, ChatResponse, OpenAIChatModel
from aeval.strategies import AiJudgeStrategy
from aeval.strategies.judge import STRUCTURED_MAX_TOKENS, VERDICT_MAX_TOKENS
from aeval.testing import ChatCall, FakeChatModel, FakeClock, OpenAICompatibleServer, Reply

pytestmark = pytest.mark.anyio

SAMPLE = EvaluationSample("capital", ["What is the capital of France?"], "Paris")


def cut(text: str, limit: int = 64) -> ChatResponse:
    """A reply the server cut off at ``limit`` tokens."""
    return ChatResponse(text, metadata={"finish_reason": "length", "max_tokens": limit})


# --- max_tokens and the other options -------------------------------------------------------


async def test_the_judge_always_sends_max_tokens_with_the_modes_default() -> None:
    verdict = FakeChatModel(["true"])
    structured = FakeChatModel(['{"score": 90}'])
    await AiJudgeStrategy(verdict).evaluate(SAMPLE, "Paris")
    await AiJudgeStrategy(structured, structured=True).evaluate(SAMPLE, "Paris")
    assert verdict.calls[0].options == ChatOptions(max_tokens=VERDICT_MAX_TOKENS)
    assert structured.calls[0].options == ChatOptions(max_tokens=STRUCTURED_MAX_TOKENS)
    assert (VERDICT_MAX_TOKENS, STRUCTURED_MAX_TOKENS) == (16, 256)


async def test_options_given_to_the_judge_reach_the_server() -> None:
    async with OpenAICompatibleServer(['{"score": 90}']) as server:
        async with OpenAIChatModel("judge", base_url=server.base_url) as model:
            strategy = AiJudgeStrategy(
                model, structured=True, max_tokens=40, temperature=0.3, seed=11, stop=["\n\n"]
            )
            result = await strategy.evaluate(SAMPLE, "Paris")
        body = server.requests[0].json
    assert {k: body[k] for k in ("max_tokens", "temperature", "seed", "stop")} == {
        "max_tokens": 40,
        "temperature": 0.3,
        "seed": 11,
        "stop": ["\n\n"],
    }
    assert (result.metadata["max_tokens"], result.metadata["finish_reason"]) == (40, "stop")


async def test_a_model_without_options_still_judges_and_is_warned_about_explicit_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class OldModel:
        model = "old"

        def __init__(self) -> None:
            self.kwargs: list[dict[str, Any]] = []

        async def chat(self, messages: Any, *, json_mode: bool = False) -> ChatResponse:
            self.kwargs.append({"json_mode": json_mode})
            return ChatResponse("true")

    old = OldModel()
    result = await AiJudgeStrategy(old).evaluate(SAMPLE, "Paris")
    assert result.passed and old.kwargs == [{"json_mode": False}]
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="aeval.strategies"):
        AiJudgeStrategy(old, max_tokens=32)
    assert "the chat model old takes no options=" in caplog.text


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens must be a positive integer, got 0"):
        AiJudgeStrategy(FakeChatModel(), max_tokens=0)
    with pytest.raises(ValueError, match="aggregate must be 'majority' or 'mean'"):
        AiJudgeStrategy(FakeChatModel(), aggregate="vote")  # type: ignore[arg-type]


# --- replies cut off at max_tokens ---------------------------------------------------------


async def test_a_cut_off_json_verdict_whose_score_is_complete_is_used_and_says_so() -> None:
    reply = '{"score": 85, "passed": true, "explanation": "It names Paris but then goes on'
    model = FakeChatModel([cut(reply)])
    result = await AiJudgeStrategy(model, structured=True).evaluate(SAMPLE, "Paris")
    assert (result.passed, result.score) == (True, 0.85)
    assert result.explanation == (
        "It names Paris but then goes on… (the reply was cut off at max_tokens=64 after its "
        "score, which is used)"
    )
    assert (result.metadata["cut_off"], result.metadata["salvaged"]) == (True, True)
    assert result.metadata["finish_reason"] == "length"
    assert len(model.calls) == 1


async def test_a_reply_cut_off_before_its_score_is_not_asked_again_and_says_raise_it() -> None:
    model = FakeChatModel([cut('{"explanation": "The response is long and it goes on and on')])
    result = await AiJudgeStrategy(model, structured=True).evaluate(SAMPLE, "Paris")
    assert len(model.calls) == 1
    assert result.is_unscored
    assert result.explanation == (
        "The judge's reply could not be read (the reply was cut off at max_tokens=64 before "
        "its score was complete; raise max_tokens; not asked again: the same limit would cut "
        'the reply off again): \'{"explanation": "The response is long and it goes on and on\''
    )
    assert result.metadata["judges"][0]["cut_off"] is True


async def test_a_nested_object_of_a_cut_off_reply_is_not_taken_for_the_verdict() -> None:
    model = FakeChatModel([cut('{"criteria": {"score": 3, "why": "ok"}, "score": 8')])
    result = await AiJudgeStrategy(model, structured=True).evaluate(SAMPLE, "Paris")
    assert result.is_unscored
    assert "cut off at max_tokens=64 before its score was complete" in str(result.explanation)


async def test_a_cut_off_true_false_reply_is_read_from_its_start() -> None:
    model = FakeChatModel([cut("True. The response names Paris, which is the capital", 16)])
    result = await AiJudgeStrategy(model).evaluate(SAMPLE, "Paris")
    assert (result.passed, result.metadata["cut_off"]) == (True, True)


async def test_a_cut_off_true_false_reply_that_does_not_start_with_a_verdict_is_asked_again() -> (
    None
):
    model = FakeChatModel([cut("Let me think about whether this is right", 16), "false"])
    result = await AiJudgeStrategy(model).evaluate(SAMPLE, "Lyon")
    assert (result.passed, len(model.calls)) == (False, 2)
    assert (
        model.calls[1]
        .messages[-1]
        .content.startswith(
            "Your reply could not be read: the reply does not start with true or false (it was cut "
            "off at max_tokens=16). Reply with one word only"
        )
    )


async def test_a_model_that_does_not_stop_is_bounded_by_the_judges_max_tokens() -> None:
    """The issue's llama.cpp run: without max_tokens a small model filled its context."""
    rambling = Reply.rambling("Let me think step by step about", context_tokens=4096)
    async with OpenAICompatibleServer(default=rambling) as server:
        async with OpenAIChatModel("small", base_url=server.base_url) as model:
            strategy = AiJudgeStrategy(model, structured=True)
            report = await Scorer().evaluate([SAMPLE], lambda params: "Paris", strategy)
        requests = server.requests
    row = report.evaluations[0]
    assert [r.json["max_tokens"] for r in requests] == [256]
    assert row.outcome is Outcome.UNSCORED and report.error_count == 0
    assert row.explanation is not None
    assert row.explanation.startswith(
        "The judge's reply could not be read (the reply was cut off at max_tokens=256 before "
        "it held a JSON object; raise max_tokens; not asked again"
    )
    assert len(str(row.metadata["raw_reply"]).split()) == 256


async def test_a_long_json_reply_cut_by_the_server_is_salvaged_over_http() -> None:
    verdict = (
        '{"score": 90, "passed": true, "explanation": "The response is right and it '
        + "keeps explaining why " * 20
        + '"}'
    )
    async with (
        OpenAICompatibleServer([verdict]) as server,
        OpenAIChatModel("judge", base_url=server.base_url) as model,
    ):
        strategy = AiJudgeStrategy(model, structured=True, max_tokens=20)
        result = await strategy.evaluate(SAMPLE, "Paris")
    assert (result.passed, result.score, result.metadata["salvaged"]) == (True, 0.9, True)
    assert str(result.explanation).endswith(
        "(the reply was cut off at max_tokens=20 after its score, which is used)"
    )


# --- a readable score with a passed that is not a boolean ----------------------------------


@pytest.mark.parametrize(
    ("reply", "passed", "ignored"),
    [
        ('{"score": 90, "passed": 1}', True, 1),
        ('{"score": 20, "passed": 1}', False, 1),
        ('{"score": 80, "passed": "yes"}', True, "yes"),
        ('{"score": 80, "passed": 100}', True, 100),
        ('{"score": 30, "passed": 0}', False, 0),
    ],
)
async def test_a_passed_that_is_not_a_boolean_leaves_the_verdict_to_the_score(
    reply: str, passed: bool, ignored: object
) -> None:
    async with (
        OpenAICompatibleServer([reply]) as server,
        OpenAIChatModel("judge", base_url=server.base_url) as model,
    ):
        result = await AiJudgeStrategy(model, structured=True).evaluate(SAMPLE, "Paris")
    assert result.passed is passed
    assert result.metadata["decided_by"] == "threshold"
    assert result.metadata["passed_ignored"] == ignored
    assert len(server.requests) == 1


async def test_the_judges_own_boolean_is_said_to_decide() -> None:
    model = FakeChatModel(['{"score": 90, "passed": false}', '{"score": 90}'])
    strategy = AiJudgeStrategy(model, structured=True)
    own = await strategy.evaluate(SAMPLE, "Paris")
    threshold = await strategy.evaluate(SAMPLE, "Paris")
    assert (own.passed, own.metadata["decided_by"]) == (False, "judge")
    assert (threshold.passed, threshold.metadata["decided_by"]) == (True, "threshold")
    assert "passed_ignored" not in threshold.metadata


# --- the re-ask -----------------------------------------------------------------------------


async def test_the_reask_shows_the_error_and_a_repeated_reply_is_not_asked_a_third_time() -> None:
    model = FakeChatModel(['{"verdict": "good"}', '{"verdict": "good"}', "never asked"])
    result = await AiJudgeStrategy(model, structured=True).evaluate(SAMPLE, "Paris")
    assert len(model.calls) == 2
    first, second = model.calls
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[-2:] == (
        ChatMessage("assistant", '{"verdict": "good"}'),
        ChatMessage(
            "user",
            'Your reply could not be read: the JSON object has no "score" field. Reply with '
            'only a JSON object, no other text:\n{"score": <a number from 0 to 100>, "passed": '
            '<true or false>, "explanation": "<one sentence>"}',
        ),
    )
    assert result.is_unscored and result.metadata["repeated"] is True
    assert result.explanation == (
        "The judge's reply could not be read, even when asked again: it gave the same reply "
        '(the JSON object has no "score" field): \'{"verdict": "good"}\''
    )


# --- the cache ------------------------------------------------------------------------------


async def test_an_unreadable_reply_is_not_cached_so_the_next_run_recovers(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite"
    first = FakeChatModel(["hmm", "hmm?"])
    cache = JudgeCache(path)
    unscored = await AiJudgeStrategy(first, cache=cache).evaluate(SAMPLE, "Paris")
    await cache.aclose()
    second = FakeChatModel(["true"])
    cache = JudgeCache(path)
    recovered = await AiJudgeStrategy(second, cache=cache).evaluate(SAMPLE, "Paris")
    again = await AiJudgeStrategy(FakeChatModel([]), cache=cache).evaluate(SAMPLE, "Paris")
    await cache.aclose()
    assert unscored.is_unscored and cache.statistics().misses == 1
    assert (recovered.passed, recovered.metadata["cached"], len(second.calls)) == (
        True,
        False,
        1,
    )
    assert (again.passed, again.metadata["cached"]) == (True, True)


async def test_an_unreadable_reply_stored_by_an_older_version_is_asked_again() -> None:
    cache = JudgeCache(path=None)
    model = FakeChatModel(["true"], model="judge")
    strategy = AiJudgeStrategy(model, cache=cache)
    prompt = [ChatMessage("user", strategy.render(SAMPLE, "Paris"))]
    key = JudgeCache.key("judge", prompt, json_mode=False, options=strategy.options)
    await cache.put(key, ChatResponse("I am not sure"))
    result = await strategy.evaluate(SAMPLE, "Paris")
    stored = await cache.get(key)
    assert (result.passed, len(model.calls)) == (True, 1)
    assert stored is not None and stored.text == "true"


async def test_the_cache_keeps_the_finish_reason_of_a_salvaged_reply(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite"
    reply = '{"score": 85, "explanation": "Right but the reply goes on'
    cache = JudgeCache(path)
    first = await AiJudgeStrategy(
        FakeChatModel([cut(reply)]), structured=True, cache=cache
    ).evaluate(SAMPLE, "Paris")
    await cache.aclose()
    cache = JudgeCache(path)
    model = FakeChatModel([])
    second = await AiJudgeStrategy(model, structured=True, cache=cache).evaluate(SAMPLE, "Paris")
    await cache.aclose()
    assert (first.score, second.score, second.metadata["cached"]) == (0.85, 0.85, True)
    assert second.metadata["salvaged"] is True and model.calls == []


async def test_the_cache_key_covers_the_options() -> None:
    cache = JudgeCache(path=None)
    model = FakeChatModel(["true", "true"])
    await AiJudgeStrategy(model, cache=cache, max_tokens=16).evaluate(SAMPLE, "Paris")
    await AiJudgeStrategy(model, cache=cache, max_tokens=64).evaluate(SAMPLE, "Paris")
    await AiJudgeStrategy(model, cache=cache, max_tokens=16).evaluate(SAMPLE, "Paris")
    assert [call.options for call in model.calls] == [
        ChatOptions(max_tokens=16),
        ChatOptions(max_tokens=64),
    ]
    messages = (ChatMessage("user", "x"),)
    assert JudgeCache.key("m", messages, json_mode=False) == JudgeCache.key(
        "m", messages, json_mode=False, options=ChatOptions()
    )


# --- retries --------------------------------------------------------------------------------


async def test_an_error_row_counts_the_retries_of_the_first_call_and_of_the_reask() -> None:
    replies = [Reply.rate_limited(retry_after=0), Reply.text("maybe")] + [
        Reply.server_error(503)
    ] * 4
    async with OpenAICompatibleServer(replies) as server:
        model = OpenAIChatModel("judge", base_url=server.base_url, backoff=0.01, clock=FakeClock())
        async with model:
            report = await Scorer().evaluate(
                [SAMPLE], lambda params: "Paris", AiJudgeStrategy(model)
            )
        requests = len(server.requests)
    row = report.evaluations[0]
    assert (row.outcome, requests) == (Outcome.ERROR, 6)
    assert row.metadata["retries"] == 4 == report.usage.retries
    assert model.statistics().retries == 4


async def test_the_fallback_counts_every_retry_too() -> None:
    class Keyword:
        name = "keyword"

        def evaluate(self, sample: EvaluationSample, output: str) -> Any:
            from aeval import EvaluationResult

            return EvaluationResult.from_boolean("Paris" in output)

    error = ConnectionError("down")
    error.retries = 3  # type: ignore[attr-defined]
    model = FakeChatModel([ChatResponse("hm", retries=2), error])
    result = await AiJudgeStrategy(model, fallback=Keyword()).evaluate(SAMPLE, "Paris")
    assert (result.passed, result.metadata["retries"]) == (True, 5)
    assert [c.options for c in model.calls] == [ChatOptions(max_tokens=16)] * 2
    assert isinstance(model.calls[0], ChatCall)
