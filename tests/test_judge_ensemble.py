"""Several judges decide a row by majority or mean; their agreement is in the row."""

from __future__ import annotations

import pytest

from aeval import EvaluationResult, EvaluationSample, JudgeCache, Outcome, Scorer
from aeval.models import ChatOptions, ChatResponse, OpenAIChatModel, TokenUsage
from aeval.strategies import AiJudgeStrategy
from aeval.testing import FakeChatModel, OpenAICompatibleServer, RecordedRequest, Reply

pytestmark = pytest.mark.anyio

SAMPLE = EvaluationSample("capital", ["What is the capital of France?"], "Paris")


def judges(*replies: str | Exception) -> list[FakeChatModel]:
    return [
        FakeChatModel([reply], model=f"judge-{i}", usage=TokenUsage(10, 2))
        for i, reply in enumerate(replies, start=1)
    ]


async def test_a_majority_of_three_decides_and_the_agreement_is_recorded() -> None:
    models = judges("true", "false", "true")
    result = await AiJudgeStrategy(models).evaluate(SAMPLE, "Paris")
    assert result.passed and result.score == pytest.approx(2 / 3)
    meta = result.metadata
    assert (meta["votes"], meta["agreement"], meta["aggregate"]) == (
        "2/3",
        pytest.approx(2 / 3),
        "majority",
    )
    assert [j["verdict"] for j in meta["judges"]] == ["passed", "failed", "passed"]
    assert [j["judge"] for j in meta["judges"]] == ["judge-1", "judge-2", "judge-3"]
    assert (meta["prompt_tokens"], meta["completion_tokens"]) == (30, 6)
    assert meta["judge_model"] == "judge-1, judge-2, judge-3"
    assert result.explanation == (
        "2 of 3 judges passed it (majority). judge-1: true | judge-2: false | judge-3: true"
    )


async def test_a_tie_fails() -> None:
    result = await AiJudgeStrategy(judges("true", "false")).evaluate(SAMPLE, "Paris")
    assert (result.passed, result.metadata["votes"], result.metadata["agreement"]) == (
        False,
        "1/2",
        0.5,
    )
    assert str(result.explanation).startswith("1 of 2 judges passed it (majority, a tie fails)")


async def test_the_mean_decides_against_the_threshold() -> None:
    models = judges('{"score": 90}', '{"score": 40}', '{"score": 50}')
    mean = AiJudgeStrategy(models, structured=True, aggregate="mean", threshold=0.6)
    result = await mean.evaluate(SAMPLE, "Paris")
    assert result.passed and result.score == pytest.approx(0.6)
    # on its own only the 90 reaches the threshold: one judge agrees with the decision
    assert result.metadata["votes"] == "1/3"
    assert result.metadata["agreement"] == pytest.approx(1 / 3)
    assert str(result.explanation).startswith(
        "1 of 3 judges passed it (mean score 0.60 against the threshold 0.6)"
    )


async def test_an_unreadable_or_failing_judge_sits_out() -> None:
    models = judges("maybe", ConnectionError("down"), "false")
    models[0] = FakeChatModel(["maybe", "perhaps"], model="judge-1")
    result = await AiJudgeStrategy(models).evaluate(SAMPLE, "Lyon")
    assert (result.passed, result.metadata["votes"]) == (False, "0/1")
    records = result.metadata["judges"]
    assert [r["verdict"] for r in records] == ["unscored", "error", "failed"]
    assert records[0]["reasked"] and records[0]["reply"] == "perhaps"
    assert records[1]["error"] == "ConnectionError: down"
    assert "; 2 could not be read or failed" in str(result.explanation)


async def test_no_readable_judge_is_unscored() -> None:
    models = [FakeChatModel(["?", "?!"], model=f"j{i}") for i in (1, 2)]
    result = await AiJudgeStrategy(models).evaluate(SAMPLE, "Paris")
    assert result.is_unscored
    assert str(result.explanation).startswith(
        "None of the 2 judges' replies could be read: j1: the reply does not start with true "
        "or false; j2: the reply does not start with true or false"
    )


async def test_every_judge_failing_is_an_error_row_with_every_retry() -> None:
    errors = []
    for retries in (2, 3):
        error = ConnectionError("down")
        error.retries = retries  # type: ignore[attr-defined]
        errors.append(error)
    models = [FakeChatModel([error], model=f"j{i}") for i, error in enumerate(errors)]
    report = await Scorer().evaluate([SAMPLE], lambda p: "Paris", AiJudgeStrategy(models))
    row = report.evaluations[0]
    assert (row.outcome, row.metadata["retries"], report.usage.retries) == (Outcome.ERROR, 5, 5)


async def test_one_model_several_times_gets_a_seed_each_and_its_own_cache_entries() -> None:
    model = FakeChatModel(["true", "false", "true"], model="judge")
    cache = JudgeCache(path=None)
    strategy = AiJudgeStrategy([model] * 3, temperature=0.7, seed=7, cache=cache)
    result = await strategy.evaluate(SAMPLE, "Paris")
    assert sorted(call.options.seed or 0 for call in model.calls if call.options) == [7, 8, 9]
    assert {call.options.temperature for call in model.calls if call.options} == {0.7}
    assert [r["judge"] for r in result.metadata["judges"]] == ["judge#1", "judge#2", "judge#3"]
    assert result.metadata["votes"] == "2/3"
    assert cache.statistics().misses == 3


async def test_prices_are_per_judge_model() -> None:
    models = judges("true", "true")
    prices = {"judge-1": (1.0, 0.0), "judge-2": (2.0, 0.0)}
    result = await AiJudgeStrategy(models, prices=prices).evaluate(SAMPLE, "Paris")
    assert result.metadata["cost"] == pytest.approx((10 * 1.0 + 10 * 2.0) / 1000)
    with pytest.raises(ValueError, match="prices has no entry for the judge model 'judge-2'"):
        AiJudgeStrategy(judges("true", "true"), prices={"judge-1": (1.0, 1.0)})


async def test_judges_are_consulted_concurrently_over_http() -> None:
    def by_model(request: RecordedRequest) -> Reply:
        return Reply.json({"score": 80 if request.json["model"] == "a" else 30})

    async with (
        OpenAICompatibleServer(handler=by_model) as server,
        OpenAIChatModel("a", base_url=server.base_url) as a,
        OpenAIChatModel("b", base_url=server.base_url) as b,
        OpenAIChatModel("c", base_url=server.base_url) as c,
    ):
        strategy = AiJudgeStrategy([a, b, c], structured=True, name="panel")
        report = await Scorer().evaluate([SAMPLE], lambda p: "Paris", strategy)
        models = sorted(r.json["model"] for r in server.requests)
    row = report.evaluations[0]
    assert models == ["a", "b", "c"]
    assert (row.outcome, row.metadata["votes"]) == (Outcome.FAILED, "1/3")
    assert repr(strategy).startswith("AiJudgeStrategy(model=['a', 'b', 'c'], aggregate='majority'")


def test_an_empty_list_of_judges_is_refused() -> None:
    with pytest.raises(ValueError, match="model must be a chat model or a non-empty list"):
        AiJudgeStrategy([])
    with pytest.raises(TypeError, match="got str"):
        AiJudgeStrategy([FakeChatModel(), "judge"])  # type: ignore[list-item]


def test_threshold_is_accepted_with_the_mean_of_true_false_judges() -> None:
    AiJudgeStrategy(judges("true", "true"), aggregate="mean", threshold=0.6)
    with pytest.raises(ValueError, match="scale and threshold apply to structured=True"):
        AiJudgeStrategy(judges("true", "true"), threshold=0.6)


async def test_a_single_judge_row_keeps_its_shape() -> None:
    result = await AiJudgeStrategy(judges("true")[0]).evaluate(SAMPLE, "Paris")
    assert "votes" not in result.metadata and "agreement" not in result.metadata
    assert result == EvaluationResult(True, 1.0, "true", result.metadata)
    assert ChatResponse("x").metadata == {}
    assert ChatOptions() == ChatOptions()
