from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from aeval import EvaluationResult, EvaluationSample, JudgeCache, Outcome, Scorer
from aeval.models import ChatMessage, ChatOptions, ChatResponse, TokenUsage
from aeval.strategies.judge import DEFAULT_PROMPT, STRUCTURED_PROMPT, AiJudgeStrategy
from aeval.testing import ChatCall, FakeChatModel

USAGE = TokenUsage(100, 5)
SAMPLE = EvaluationSample("capital", ["What is the capital of France?"], "Paris")
JUDGED_TRUE = {
    "judge": "fake-judge",
    "verdict": "passed",
    "score": 1.0,
    "unreadable": False,
    "reasked": False,
    "cut_off": False,
    "salvaged": False,
}


def fake_judge(
    *replies: str | ChatResponse | Exception,
    model: str = "fake-judge",
    usage: TokenUsage = USAGE,
    retries: int = 0,
) -> FakeChatModel:
    """A scripted judge: each call takes the next reply (an exception is raised)."""
    return FakeChatModel(replies, model=model, usage=usage, retries=retries)


class KeywordFallback:
    name = "keyword"

    def evaluate(self, sample: EvaluationSample, output: str) -> EvaluationResult:
        return EvaluationResult.from_boolean(str(sample.expected_output) in output, "keyword found")


# --- true/false parsing ---------------------------------------------------------------------


def judged(reply: str, **options: Any) -> EvaluationResult:
    """The judge's result when its model replies ``reply`` (and the same again if asked)."""
    judge = AiJudgeStrategy(fake_judge(reply, reply), **options)
    result: EvaluationResult = anyio.run(judge.evaluate, SAMPLE, "Paris")
    return result


def parse_verdict(reply: str) -> bool:
    result = judged(reply)
    assert result.score is not None, result.explanation
    return result.passed


def unread_because(result: EvaluationResult, reason: str) -> bool:
    """Whether the judge could not read the reply, for ``reason``."""
    return result.score is None and f"({reason}): " in str(result.explanation)


Structured = tuple[float, float, bool | None, str | None, Any]
"""The raw score, the 0-1 score, the judge's own passed, its explanation, an ignored passed."""


def parse_structured(reply: str, scale: tuple[float, float]) -> Structured:
    result = judged(reply, structured=True, scale=scale)
    assert result.score is not None, result.explanation
    metadata = result.metadata
    explicit = result.passed if metadata["decided_by"] == "judge" else None
    explanation = None if result.explanation == reply else result.explanation
    return (
        metadata["raw_score"],
        result.score,
        explicit,
        explanation,
        metadata.get("passed_ignored"),
    )


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("true", True),
        ("TRUE", True),
        ("True.", True),
        ("**true**", True),
        ("`false`", False),
        ("  'true'  \n", True),
        ("true, because the capital is Paris", True),
        ("true\nbecause the capital is Paris", True),
        ("False - the response names Lyon", False),
        ("# False", False),
        ("> true", True),
        ("Answer: **True**", True),
        ("**Verdict:** FAIL", False),
        ("pass", True),
        ("Passed.", True),
        ("failed", False),
        ("“true”", True),
    ],
)
def test_parse_verdict_reads_a_leading_verdict_word(reply: str, verdict: bool) -> None:
    assert parse_verdict(reply) is verdict


@pytest.mark.parametrize(
    "reply",
    [
        "yes",
        "No.",
        "correct",
        "It is true",
        "The answer is false",
        "true/false",
        "trueish",
        "true1",
        "",
        "   ",
        "**",
    ],
)
def test_parse_verdict_rejects_anything_else(reply: str) -> None:
    assert unread_because(judged(reply), "the reply does not start with true or false")


# --- structured parsing ---------------------------------------------------------------------

PERCENT = (0.0, 100.0)
FIVE = (1.0, 5.0)


@pytest.mark.parametrize(
    ("reply", "scale", "expected"),
    [
        (
            '{"score": 85, "passed": true, "explanation": "Mostly right"}',
            PERCENT,
            (85.0, 0.85, True, "Mostly right", None),
        ),
        (
            '```json\n{"score": 20, "passed": false, "explanation": "Wrong city"}\n```',
            PERCENT,
            (20.0, 0.2, False, "Wrong city", None),
        ),
        (
            'Here is my verdict:\n{"score": 4, "reason": "Close"}\nHope this helps!',
            FIVE,
            (4.0, 0.75, None, "Close", None),
        ),
        ('{"score": "85"}', PERCENT, (85.0, 0.85, None, None, None)),
        ('{"score": "4/5", "reason": "ok"}', FIVE, (4.0, 0.75, None, "ok", None)),
        ('{"score": "4 out of 5"}', FIVE, (4.0, 0.75, None, None, None)),
        ('{"score": "8/10"}', PERCENT, (80.0, 0.8, None, None, None)),
        ('{"score": "60%"}', PERCENT, (60.0, 0.6, None, None, None)),
        ('{"score": 1, "passed": "FAIL"}', FIVE, (1.0, 0.0, False, None, None)),
        ('{"score": 100, "passed": "true"}', PERCENT, (100.0, 1.0, True, None, None)),
        (
            '{"score": 50, "passed": "maybe"}',
            PERCENT,
            (50.0, 0.5, None, None, "maybe"),
        ),
        ('{"score": 90, "passed": 1}', PERCENT, (90.0, 0.9, None, None, 1)),
        (
            'I weighed {this} and {"score": 5, "reasoning": "exact"}',
            FIVE,
            (5.0, 1.0, None, "exact", None),
        ),
        (
            '```\n{"score": 3.5, "explanation": "half"}\n```',
            FIVE,
            (3.5, 0.625, None, "half", None),
        ),
    ],
)
def test_parse_structured_reads_the_shapes_judges_send(
    reply: str, scale: tuple[float, float], expected: Structured
) -> None:
    assert parse_structured(reply, scale) == expected


@pytest.mark.parametrize(
    ("reply", "scale", "reason"),
    [
        ("true", PERCENT, "the reply holds no JSON object"),
        ('{"score": ', PERCENT, "the reply holds no JSON object"),
        ("[1, 2]", PERCENT, "the reply holds no JSON object"),
        ('{"passed": true}', PERCENT, 'the JSON object has no "score" field'),
        ('{"score": "high"}', PERCENT, "the \"score\" field 'high' is not a number"),
        ('{"score": true}', PERCENT, 'the "score" field True is not a number'),
        ('{"score": 7, "reason": "x"}', FIVE, "the score 7 is outside the scale 1 to 5"),
        ('{"score": 0}', FIVE, "the score 0 is outside the scale 1 to 5"),
        ('{"score": 101}', PERCENT, "the score 101 is outside the scale 0 to 100"),
    ],
)
def test_parse_structured_explains_what_is_wrong(
    reply: str, scale: tuple[float, float], reason: str
) -> None:
    assert unread_because(judged(reply, structured=True, scale=scale), reason)


# --- the prompt -----------------------------------------------------------------------------


def test_default_prompt_keeps_the_seed_meaning_and_shape() -> None:
    assert DEFAULT_PROMPT.endswith("Expected output: {expected_output}\n\n")
    assert "Response to evaluate: {response}\n" in DEFAULT_PROMPT
    assert "true" in DEFAULT_PROMPT and "false" in DEFAULT_PROMPT
    assert DEFAULT_PROMPT.index("{response}") < DEFAULT_PROMPT.index("{expected_output}")


@pytest.mark.anyio
async def test_default_call_sends_one_user_message_with_the_seed_prompt() -> None:
    model = fake_judge("true")
    result = await AiJudgeStrategy(model).evaluate(SAMPLE, "Paris.")
    expected_prompt = DEFAULT_PROMPT.replace("{response}", "Paris.").replace(
        "{expected_output}", "Paris"
    )
    assert model.calls == [
        ChatCall((ChatMessage("user", expected_prompt),), False, ChatOptions(max_tokens=16))
    ]
    assert result == EvaluationResult(
        True,
        1.0,
        "true",
        {
            "judge_model": "fake-judge",
            "raw_reply": "true",
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "retries": 0,
            "max_tokens": 16,
            "judges": [JUDGED_TRUE],
        },
    )


@pytest.mark.anyio
async def test_substitution_is_literal_and_response_first() -> None:
    sample = EvaluationSample("s", ["q"], "E {response}")
    model = fake_judge("false")
    strategy = AiJudgeStrategy(model, "R={response} X={expected_output} Q={question}")
    await strategy.evaluate(sample, "out {expected_output}")
    # the output's own placeholder is substituted (as upstream); the expected output's is not
    assert model.calls[0].messages[0].content == "R=out E {response} X=E {response} Q=q"


@pytest.mark.anyio
async def test_question_is_the_named_question_parameter_or_all_parameters() -> None:
    strategy_model = fake_judge("true", "true")
    strategy = AiJudgeStrategy(strategy_model, "Q: {question} | A: {response}")
    named = EvaluationSample("n", {"context": "ctx", "question": "Why?"}, "x")
    unnamed = EvaluationSample("u", ["first", 2], "x")
    await strategy.evaluate(named, "because")
    await strategy.evaluate(unnamed, "because")
    prompts = [call.messages[0].content for call in strategy_model.calls]
    assert prompts == ["Q: Why? | A: because", "Q: first\n2 | A: because"]


@pytest.mark.anyio
async def test_list_expected_output_and_system_prompt() -> None:
    model = fake_judge("true")
    strategy = AiJudgeStrategy(model, "{response} vs {expected_output}", system_prompt="Be strict")
    await strategy.evaluate(EvaluationSample("l", [], ["Paris", "paris, France"]), ["Paris"])
    assert model.calls[0].messages == (
        ChatMessage("system", "Be strict"),
        ChatMessage("user", "['Paris'] vs One of:\n- Paris\n- paris, France"),
    )


@pytest.mark.anyio
async def test_none_output_fails_without_calling_the_judge() -> None:
    model = fake_judge()
    result = await AiJudgeStrategy(model).evaluate(SAMPLE, None)
    assert (result.passed, result.score, result.explanation) == (False, 0.0, "output is None")
    assert model.calls == []


# --- verdicts, re-asking, unscored, fallback ------------------------------------------------


@pytest.mark.anyio
async def test_a_robust_false_verdict_fails_with_the_reply_as_explanation() -> None:
    result = await AiJudgeStrategy(fake_judge("**False.** It says Lyon.")).evaluate(SAMPLE, "Lyon")
    assert (result.passed, result.score, result.explanation) == (
        False,
        0.0,
        "**False.** It says Lyon.",
    )


@pytest.mark.anyio
async def test_an_unreadable_reply_is_asked_again_once_with_a_corrective_message() -> None:
    model = fake_judge("I think it is fine", "TRUE", usage=TokenUsage(100, 5), retries=1)
    result = await AiJudgeStrategy(model).evaluate(SAMPLE, "Paris")
    first_messages = model.calls[0].messages
    assert model.calls[1] == ChatCall(
        (
            *first_messages,
            ChatMessage("assistant", "I think it is fine"),
            ChatMessage(
                "user",
                "Your reply could not be read: the reply does not start with true or false. "
                "Reply with one word only: true if the response is correct, false if it is not.",
            ),
        ),
        False,
        ChatOptions(max_tokens=16),
    )
    assert result.passed and result.score == 1.0
    assert result.explanation == "TRUE"
    assert dict(result.metadata) == {
        "judge_model": "fake-judge",
        "raw_reply": "TRUE",
        "prompt_tokens": 200,
        "completion_tokens": 10,
        "retries": 2,
        "reasked": True,
        "first_reply": "I think it is fine",
        "max_tokens": 16,
        "judges": [{**JUDGED_TRUE, "unreadable": True, "reasked": True}],
    }


@pytest.mark.anyio
async def test_a_reply_unreadable_twice_is_unscored_with_the_raw_reply() -> None:
    model = fake_judge("maybe", "I cannot decide")
    result = await AiJudgeStrategy(model).evaluate(SAMPLE, "Paris")
    assert len(model.calls) == 2
    assert result.is_unscored and result.score is None and not result.passed
    assert result.explanation == (
        "The judge's reply could not be read, even when asked again (the reply does not "
        "start with true or false): 'I cannot decide'"
    )
    assert result.metadata["raw_reply"] == "I cannot decide"
    assert result.metadata["first_reply"] == "maybe"
    assert result.metadata["prompt_tokens"] == 200


@pytest.mark.anyio
async def test_a_fallback_scores_an_unreadable_row_and_says_so() -> None:
    model = fake_judge("hmm", "hmm again")
    strategy = AiJudgeStrategy(model, fallback=KeywordFallback())
    result = await strategy.evaluate(SAMPLE, "It is Paris")
    assert (result.passed, result.score) == (True, 1.0)
    assert result.explanation == (
        "The judge's reply could not be read, even when asked again (the reply does not "
        "start with true or false): 'hmm again'; scored by the fallback strategy keyword: "
        "keyword found"
    )
    assert result.metadata["fallback"] == "keyword"
    assert result.metadata["raw_reply"] == "hmm again"
    assert result.metadata["completion_tokens"] == 10


@pytest.mark.anyio
async def test_the_fallback_is_not_used_when_the_judge_answers() -> None:
    result = await AiJudgeStrategy(fake_judge("false"), fallback=KeywordFallback()).evaluate(
        SAMPLE, "It is Paris"
    )
    assert (result.passed, "fallback" in result.metadata) == (False, False)


@pytest.mark.anyio
async def test_a_model_error_without_fallback_is_an_error_row() -> None:
    model = fake_judge(ConnectionError("server down"), ConnectionError("server down"))
    strategy = AiJudgeStrategy(model)
    with pytest.raises(ConnectionError, match="server down"):
        await strategy.evaluate(SAMPLE, "Paris")
    report = await Scorer().evaluate([SAMPLE], lambda params: "Paris", strategy)
    row = report.evaluations[0]
    assert (report.error_count, row.strategy, row.explanation) == (
        1,
        "AiJudgeStrategy",
        "ConnectionError: server down",
    )


@pytest.mark.anyio
async def test_a_failed_judge_call_falls_back_and_says_why() -> None:
    model = fake_judge(ConnectionError("server down"))
    result = await AiJudgeStrategy(model, fallback=KeywordFallback()).evaluate(
        SAMPLE, "It is Paris"
    )
    assert (result.passed, result.score) == (True, 1.0)
    assert result.explanation == (
        "The judge call failed (ConnectionError: server down); scored by the fallback "
        "strategy keyword: keyword found"
    )
    assert result.metadata["fallback"] == "keyword"
    assert result.metadata["judge_error"] == "ConnectionError: server down"
    assert result.metadata["retries"] == 0


@pytest.mark.anyio
async def test_a_judge_failing_after_retries_on_a_real_server_falls_back_counting_them() -> None:
    from aeval.models.openai import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    async with (
        OpenAICompatibleServer(default=Reply.server_error(503)) as server,
        OpenAIChatModel("judge-model", base_url=server.base_url, backoff=0.01) as model,
    ):
        fallback = AiJudgeStrategy(model, fallback=KeywordFallback())
        bare = AiJudgeStrategy(model, name="bare")
        report = await Scorer().evaluate([SAMPLE], lambda params: "It is Paris", fallback, bare)
        requests = len(server.requests)
    falling, erring = report.evaluations
    assert requests == 8  # 4 attempts for each strategy
    assert falling.outcome is Outcome.PASSED
    assert falling.metadata["fallback"] == "keyword"
    assert falling.metadata["retries"] == 3
    assert "HTTP 503" in falling.metadata["judge_error"]
    assert erring.outcome is Outcome.ERROR
    assert erring.metadata["retries"] == 3
    # every request beyond the first of each call is counted
    assert report.usage.retries == requests - 2


# --- structured mode ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_structured_mode_uses_json_mode_and_normalises_the_score() -> None:
    model = fake_judge('{"score": 85, "passed": true, "explanation": "Right city"}')
    strategy = AiJudgeStrategy(model, structured=True)
    result = await strategy.evaluate(SAMPLE, "Paris")
    messages, json_mode = model.calls[0].messages, model.calls[0].json_mode
    assert json_mode is True
    assert messages[0].content == (
        STRUCTURED_PROMPT.replace("{low}", "0")
        .replace("{high}", "100")
        .replace("{question}", "What is the capital of France?")
        .replace("{response}", "Paris")
        .replace("{expected_output}", "Paris")
        + '\nReply with only a JSON object, no other text:\n{"score": <a number from 0 to '
        '100>, "passed": <true or false>, "explanation": "<one sentence>"}'
    )
    assert (result.passed, result.score, result.explanation) == (True, 0.85, "Right city")
    assert result.metadata["raw_score"] == 85.0
    assert result.metadata["scale"] == [0.0, 100.0]
    assert result.metadata["threshold"] == 0.5


@pytest.mark.parametrize(
    ("reply", "threshold", "passed", "score"),
    [
        ('{"score": 3, "reason": "partly"}', None, True, 0.5),
        ('{"score": 2, "reason": "weak"}', None, False, 0.25),
        ('{"score": 4, "reason": "good"}', 0.8, False, 0.75),
        ('{"score": 5, "reason": "exact"}', 0.8, True, 1.0),
        ('{"score": 5, "passed": false, "reason": "judge says no"}', None, False, 1.0),
        ('{"score": 1, "passed": true, "reason": "judge says yes"}', None, True, 0.0),
    ],
)
@pytest.mark.anyio
async def test_seed_003_scale_with_threshold_fallback(
    reply: str, threshold: float | None, passed: bool, score: float
) -> None:
    strategy = AiJudgeStrategy(
        fake_judge(reply), structured=True, scale=(1, 5), threshold=threshold
    )
    result = await strategy.evaluate(SAMPLE, "Paris")
    assert (result.passed, result.score) == (passed, score)


@pytest.mark.anyio
async def test_structured_reask_states_the_format_and_the_problem() -> None:
    model = fake_judge('{"score": 9, "reason": "great"}', '{"score": 5, "reason": "great"}')
    result = await AiJudgeStrategy(model, structured=True, scale=(1, 5)).evaluate(SAMPLE, "x")
    assert model.calls[1].messages[-1] == ChatMessage(
        "user",
        "Your reply could not be read: the score 9 is outside the scale 1 to 5. Reply with only "
        'a JSON object, no other text:\n{"score": <a number from 1 to 5>, "passed": <true or '
        'false>, "explanation": "<one sentence>"}',
    )
    assert model.calls[1].json_mode is True
    assert (result.passed, result.score, result.explanation) == (True, 1.0, "great")


@pytest.mark.anyio
async def test_structured_unreadable_twice_is_unscored_in_the_report() -> None:
    model = fake_judge("Sure! The answer looks good.", "```json\n{oops}\n```")
    strategy = AiJudgeStrategy(model, structured=True, name="judge")
    report = await Scorer().evaluate([SAMPLE], lambda params: "Paris", strategy)
    row = report.evaluations[0]
    assert (report.unscored_count, row.strategy, row.score, str(row.outcome)) == (
        1,
        "judge",
        None,
        "unscored",
    )
    assert row.metadata["raw_reply"] == "```json\n{oops}\n```"
    assert report.usage.prompt_tokens == 200


def test_custom_structured_prompt_gets_the_format_unless_it_mentions_json() -> None:
    plain = AiJudgeStrategy(fake_judge(), "Rate {response}", structured=True, scale=(1, 5))
    assert plain.prompt == (
        'Rate {response}\n\nReply with only a JSON object, no other text:\n{"score": <a number '
        'from 1 to 5>, "passed": <true or false>, "explanation": "<one sentence>"}'
    )
    own = AiJudgeStrategy(
        fake_judge(), 'Rate {response}; reply JSON {"score": 1-5}', structured=True
    )
    assert own.prompt == 'Rate {response}; reply JSON {"score": 1-5}'


# --- usage and cost -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_cost_from_the_price_table_uses_the_model_the_server_names() -> None:
    model = fake_judge(ChatResponse("true", TokenUsage(1000, 200), "gpt-x-2025"))
    prices = {"fake-judge": (1.0, 1.0), "gpt-x-2025": (0.5, 1.5)}
    result = await AiJudgeStrategy(model, prices=prices).evaluate(SAMPLE, "Paris")
    assert result.metadata["judge_model"] == "gpt-x-2025"
    assert result.metadata["cost"] == pytest.approx(0.5 + 0.3)


@pytest.mark.anyio
async def test_cost_falls_back_to_the_configured_model_and_sums_in_the_report() -> None:
    model = fake_judge("nope", "true", "true", usage=TokenUsage(1000, 100), retries=1)
    strategy = AiJudgeStrategy(model, prices={"fake-judge": (0.25, 2.0)})
    samples = [SAMPLE, EvaluationSample("other", ["q"], "Rome")]
    report = await Scorer().evaluate(samples, lambda params: "Paris", strategy)
    usage = report.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.retries) == (3000, 300, 3)
    assert usage.cost == pytest.approx(3 * (0.25 + 0.2))


def test_prices_must_cover_the_judge_model() -> None:
    with pytest.raises(ValueError) as caught:
        AiJudgeStrategy(fake_judge(), prices={"other": (0.1, 0.2)})
    assert str(caught.value) == (
        "prices has no entry for the judge model 'fake-judge' (it has ['other']); add one to "
        "compute costs"
    )
    with pytest.raises(ValueError, match=r"prices\['fake-judge'\] must not be negative"):
        AiJudgeStrategy(fake_judge(), prices={"fake-judge": (-1, 0.2)})
    with pytest.raises(TypeError, match=r"prices\['fake-judge'\] must be \(USD per 1k"):
        AiJudgeStrategy(fake_judge(), prices={"fake-judge": 0.2})  # type: ignore[dict-item]


# --- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"threshold": 0.7},
            ValueError,
            "scale and threshold apply to structured=True judging only",
        ),
        (
            {"scale": (1, 5)},
            ValueError,
            "scale and threshold apply to structured=True judging only",
        ),
        (
            {"structured": True, "threshold": 3},
            ValueError,
            "threshold is a normalised score between 0 and 1, got 3; for 3 on a 1-5 scale "
            "write threshold=0.5",
        ),
        (
            {"structured": True, "scale": (5, 1)},
            ValueError,
            "scale must go from a lower to a higher score, got (5, 1)",
        ),
        (
            {"structured": True, "scale": 5},
            TypeError,
            "scale must be a (lowest, highest) pair such as (1, 5), got 5",
        ),
        (
            {"prompt": "no placeholder"},
            ValueError,
            "prompt must be a string holding the {response}",
        ),
        ({"fallback": "keyword"}, TypeError, "fallback must be a strategy with an evaluate"),
        ({"cache": {}}, TypeError, "cache must be a JudgeCache or None, got dict"),
        ({"name": " "}, ValueError, "name must be a non-blank string or None, got ' '"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error) as caught:
        AiJudgeStrategy(fake_judge(), **kwargs)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


def test_model_must_have_chat() -> None:
    with pytest.raises(TypeError, match="model must be a chat model with an async chat"):
        AiJudgeStrategy(object())  # type: ignore[arg-type]


def test_name_and_repr() -> None:
    assert AiJudgeStrategy(fake_judge()).name == "AiJudgeStrategy"
    strategy = AiJudgeStrategy(
        fake_judge(), structured=True, scale=(1, 5), fallback=KeywordFallback(), name="judge"
    )
    assert strategy.name == "judge"
    assert repr(strategy) == (
        "AiJudgeStrategy(model='fake-judge', structured=True, scale=(1.0, 5.0), "
        "threshold=0.5, fallback='keyword', name='judge')"
    )


# --- with a cache ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_cached_call_is_made_once_and_reports_no_usage() -> None:
    model = fake_judge("true", "false")
    strategy = AiJudgeStrategy(model, cache=JudgeCache(path=None))
    first = await strategy.evaluate(SAMPLE, "Paris")
    second = await strategy.evaluate(SAMPLE, "Paris")
    other = await strategy.evaluate(SAMPLE, "Lyon")
    assert len(model.calls) == 2
    assert (first.metadata["cached"], first.metadata["prompt_tokens"]) == (False, 100)
    assert dict(second.metadata) == {
        "judge_model": "fake-judge",
        "raw_reply": "true",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "retries": 0,
        "cached": True,
        "max_tokens": 16,
        "judges": [JUDGED_TRUE],
    }
    assert (second.passed, other.passed, other.metadata["cached"]) == (True, False, False)


@pytest.mark.anyio
async def test_cached_rows_cost_nothing() -> None:
    model = fake_judge("true", usage=TokenUsage(1000, 1000))
    strategy = AiJudgeStrategy(model, cache=JudgeCache(path=None), prices={"fake-judge": (1, 1)})
    assert (await strategy.evaluate(SAMPLE, "Paris")).metadata["cost"] == 2.0
    assert (await strategy.evaluate(SAMPLE, "Paris")).metadata["cost"] == 0.0


@pytest.mark.anyio
async def test_the_cache_key_covers_the_mode_and_the_model() -> None:
    cache = JudgeCache(path=None)
    plain = fake_judge("true")
    structured = fake_judge('{"score": 100}')
    other_model = fake_judge("true", model="other")
    prompt = "{response}; answer in JSON"
    await AiJudgeStrategy(plain, prompt, cache=cache).evaluate(SAMPLE, "Paris")
    await AiJudgeStrategy(structured, prompt, structured=True, cache=cache).evaluate(
        SAMPLE, "Paris"
    )
    await AiJudgeStrategy(other_model, prompt, cache=cache).evaluate(SAMPLE, "Paris")
    assert [len(m.calls) for m in (plain, structured, other_model)] == [1, 1, 1]


@pytest.mark.anyio
async def test_identical_calls_in_flight_share_one_request() -> None:
    gate, entered = anyio.Event(), anyio.Event()

    async def gated(call: ChatCall) -> str:
        entered.set()
        await gate.wait()
        return "true"

    model = FakeChatModel(gated, model="fake-judge", usage=USAGE)
    strategy = AiJudgeStrategy(model, cache=JudgeCache(path=None))
    results: list[EvaluationResult] = []

    async def judge() -> None:
        results.append(await strategy.evaluate(SAMPLE, "Paris"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(judge)
        tg.start_soon(judge)
        await entered.wait()
        await wait_all_tasks_blocked()
        gate.set()
    assert len(model.calls) == 1
    assert sorted(r.metadata["cached"] for r in results) == [False, True]
    assert sorted(r.metadata["prompt_tokens"] for r in results) == [0, 100]
    assert all(r.passed for r in results)


@pytest.mark.anyio
async def test_the_disk_cache_survives_runs(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite"
    first_model = fake_judge('{"score": 4, "reason": "fine"}')
    cache = JudgeCache(path)
    first = AiJudgeStrategy(first_model, structured=True, scale=(1, 5), cache=cache)
    result = await first.evaluate(SAMPLE, "Paris")
    await cache.aclose()

    second_model = fake_judge()
    second_cache = JudgeCache(path)
    second = AiJudgeStrategy(second_model, structured=True, scale=(1, 5), cache=second_cache)
    again = await second.evaluate(SAMPLE, "Paris")
    await second_cache.aclose()
    assert second_model.calls == []
    assert (again.passed, again.score, again.explanation) == (True, 0.75, "fine")
    assert (result.metadata["cached"], again.metadata["cached"]) == (False, True)
    assert again.metadata["completion_tokens"] == 0


# --- end to end over real sockets -----------------------------------------------------------


@pytest.mark.anyio
async def test_scorer_run_against_a_real_server_counts_unscored_retries_and_tokens() -> None:
    from aeval.models.openai import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    replies = [
        Reply.rate_limited(retry_after=0),
        Reply.text("True.", usage=(50, 2)),
        Reply.text("Let me think about it.", usage=(60, 5)),
        Reply.text("It depends.", usage=(70, 3)),
        Reply.text("**false** - it names Lyon", usage=(40, 6)),
    ]
    samples = [
        EvaluationSample("a", ["Capital of France?"], "Paris"),
        EvaluationSample("b", ["Capital of Italy?"], "Rome"),
        EvaluationSample("c", ["Capital of Spain?"], "Madrid"),
    ]
    async with (
        OpenAICompatibleServer(replies) as server,
        OpenAIChatModel("judge-model", base_url=server.base_url, backoff=0.01) as model,
    ):
        strategy = AiJudgeStrategy(model, prices={"judge-model": (1.0, 10.0)})
        report = await Scorer().evaluate(samples, lambda params: "an answer", strategy)
        requests = server.requests

    assert [str(row.outcome) for row in report.evaluations] == ["passed", "unscored", "failed"]
    assert (report.passed_count, report.unscored_count, report.error_count) == (1, 1, 0)
    assert len(requests) == 5
    reask = requests[3].messages
    assert [m["role"] for m in reask] == ["user", "assistant", "user"]
    assert reask[1]["content"] == "Let me think about it."
    assert reask[2]["content"].startswith("Your reply could not be read")
    unscored = report.evaluations[1]
    assert unscored.score is None
    assert unscored.metadata["raw_reply"] == "It depends."
    assert unscored.metadata["judge_model"] == "judge-model"
    usage = report.usage
    assert (usage.retries, usage.prompt_tokens, usage.completion_tokens) == (1, 220, 16)
    assert usage.cost == pytest.approx((220 * 1.0 + 16 * 10.0) / 1000)


@pytest.mark.anyio
async def test_structured_judge_against_a_real_server_sends_json_mode() -> None:
    from aeval.models.openai import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    fenced = Reply.fenced_json({"score": 4, "reason": "Close enough"}, prefix="Here you go:\n")
    async with (
        OpenAICompatibleServer([fenced]) as server,
        OpenAIChatModel("judge-model", base_url=server.base_url) as model,
    ):
        strategy = AiJudgeStrategy(model, structured=True, scale=(1, 5))
        result = await strategy.evaluate(SAMPLE, "Paris")
        request = server.requests[0]
    assert request.json["response_format"] == {"type": "json_object"}
    assert (result.passed, result.score, result.explanation) == (True, 0.75, "Close enough")


@pytest.mark.anyio
async def test_a_sample_without_expected_output_is_an_error_unless_the_prompt_needs_none() -> None:
    model = FakeChatModel(["true", "true"])
    samples = [EvaluationSample("live", {"question": "2+2?"}, None)]
    compared = await Scorer().evaluate(samples, lambda question: "4", AiJudgeStrategy(model))
    [row] = compared.evaluations
    assert row.outcome is Outcome.ERROR
    assert row.error is not None and row.error.message == (
        "Sample 'live' has no expected output, and the judge's prompt compares the response "
        "with it ({expected_output}): add expected_output to the sample, or give "
        "AiJudgeStrategy a prompt that judges the response on its own (from {question} and "
        "{response})"
    )
    assert model.calls == []

    own = AiJudgeStrategy(model, "Question: {question}\nAnswer: {response}\nCorrect? true/false")
    judged = await Scorer().evaluate(samples, lambda question: "4", own)
    assert [r.outcome for r in judged.evaluations] == [Outcome.PASSED]
    [call] = model.calls
    assert call.messages[-1].content == "Question: 2+2?\nAnswer: 4\nCorrect? true/false"
