"""An evaluation suite for the support assistant of ``examples/support_bot.py``.

The dataset ``examples/support.yaml`` has a "Warranty" case the assistant cannot answer yet:
the tests below either filter by tag or set thresholds that leave room for it.

    pytest                                # from this directory
    pytest --aeval-report-dir reports     # also write each report and the suite report
    pytest --aeval-min-score 90           # fail the run when the suite's average is lower
    pytest --aeval-live                   # also run the live test (needs a deployment)
"""

from __future__ import annotations

import os

import anyio
import pytest
from support_bot import answer

from aeval import (
    EvaluationSample,
    Parameters,
    Samples,
    Scorer,
    assert_that,
    evaluate_sync,
)
from aeval.pytest_plugin import (
    EvalAssert,
    EvaluationRecorder,
    eval_cases,
    evaluation_test,
    strategies,
)
from aeval.strategies import ContainsStrategy, ExactMatchStrategy

DATASET = "../support.yaml"


@pytest.mark.anyio
@pytest.mark.scorer(concurrency=3)
@pytest.mark.samples(DATASET, tags=["smoke", "billing"])
async def test_smoke_and_billing_answers(scorer: Scorer, samples: Samples) -> None:
    """The `scorer` and `samples` fixtures: the report shows up in the terminal summary."""
    report = await scorer.evaluate(samples, answer, ExactMatchStrategy())
    assert_that(report).has_all_passed().has_evaluation_count(3)


@evaluation_test(
    samples=DATASET,
    function="bot",
    strategies=[ExactMatchStrategy(), ContainsStrategy(mode="any")],
    tags=["account", "smoke"],
    min_score=100,
)
def test_declared_evaluation() -> None:
    """Declarative: samples, the `bot` fixture and the strategies; the body may stay empty."""


@pytest.mark.anyio
@strategies(ExactMatchStrategy(), ContainsStrategy(mode="any"))
@pytest.mark.samples(DATASET)
async def test_each_strategy(strategy: object, scorer: Scorer, samples: Samples) -> None:
    """One test per strategy, id'd by its name; the whole dataset, Warranty included."""
    report = await scorer.evaluate(samples, answer, strategy)
    assert_that(report).has_score_greater_than_or_equal_to(80).has_at_most_failed_evaluations(1)


@pytest.mark.anyio
@eval_cases(DATASET, tag="smoke", threshold=0.9)
async def test_smoke_case(case: EvaluationSample, eval_assert: EvalAssert) -> None:
    """One test per smoke case, named after it."""
    reply = await answer(case.parameters)
    checked = await eval_assert.assert_eval_async(
        reply, ExactMatchStrategy(), ContainsStrategy(mode="any"), metadata={"channel": "chat"}
    )
    checked.passes()


@eval_cases(DATASET, tag="billing")
def test_billing_case(eval_assert: EvalAssert) -> None:
    """A sync test: call the async assistant with anyio.run, then assert on the scores."""
    reply = anyio.run(answer, eval_assert.case.parameters)
    eval_assert.assert_eval(reply, ExactMatchStrategy()).passes()
    assert eval_assert.assert_eval(reply, ContainsStrategy("refund")).results()[0].score == 1.0


def test_off_topic_question_falls_back(record_evaluation: EvaluationRecorder) -> None:
    """A sync test with `evaluate_sync`, recorded for the summary with `record_evaluation`."""
    off_topic = [EvaluationSample("Weather", ["Will it rain tomorrow?"], "I'm sorry")]
    report = evaluate_sync(off_topic, answer, ContainsStrategy())
    record_evaluation(report, label="fallback")
    assert report.score == 100.0


@pytest.mark.aeval_live
@pytest.mark.anyio
@pytest.mark.samples(DATASET, tags=["smoke"])
async def test_deployed_assistant(scorer: Scorer, samples: Samples) -> None:
    """Asks a deployed assistant (AEVAL_ASSISTANT_URL); skipped unless --aeval-live."""
    import httpx

    async with httpx.AsyncClient(base_url=os.environ["AEVAL_ASSISTANT_URL"], timeout=30) as client:

        async def ask(params: Parameters) -> str:
            response = await client.post("/chat", json={"question": params[0]})
            response.raise_for_status()
            return str(response.json()["answer"])

        report = await scorer.evaluate(samples, ask, ContainsStrategy(mode="any"))
    assert_that(report).has_score_greater_than_or_equal_to(80)
