from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _sinks import Rows

from aeval import EvaluationSample, JudgeCache, Outcome, SampleLoadError, Samples, Scorer
from aeval.formatters.html import HtmlFormatter
from aeval.models import ChatOptions, ChatResponse
from aeval.strategies import (
    AnswerRelevancyStrategy,
    ContextPrecisionStrategy,
    ContextRecallStrategy,
    FaithfulnessStrategy,
)
from aeval.strategies.grounding import GROUNDING_MAX_TOKENS
from aeval.testing import FakeChatModel, FakeEmbedder, OpenAICompatibleServer
from aeval.trace import record_retrieval, record_tool_call

pytestmark = pytest.mark.anyio

QUESTION = "How tall is the Eiffel Tower?"
SAMPLE = EvaluationSample("eiffel", [QUESTION], "It is 330 metres tall.")
DOCS = [
    {"id": "d1", "text": "The Eiffel Tower is 330 metres tall.", "score": 0.9},
    {"id": "d2", "text": "Paris is the capital of France.", "score": 0.4},
]


def retrieving_target(question: str) -> str:
    record_retrieval(DOCS, query=question)
    return "The Eiffel Tower is 330 metres tall and was built in 1889."


def claims(*pairs: tuple[str, str]) -> str:
    return json.dumps({"claims": [{"claim": c, "verdict": v} for c, v in pairs]})


async def test_faithfulness_scores_the_supported_share_with_the_claims_in_the_metadata() -> None:
    judge = FakeChatModel(
        [claims(("The tower is 330 m tall", "supported"), ("It was built in 1889", "not_found"))]
    )
    report = await Scorer().evaluate([SAMPLE], retrieving_target, FaithfulnessStrategy(judge))
    (row,) = report.evaluations
    assert row.score == 0.5
    assert row.outcome is Outcome.FAILED
    assert row.metadata["claims"] == [
        {"claim": "The tower is 330 m tall", "verdict": "supported"},
        {"claim": "It was built in 1889", "verdict": "not_found"},
    ]
    assert (row.metadata["supported"], row.metadata["not_found"]) == (1, 1)
    assert "It was built in 1889" in (row.explanation or "")
    call = judge.calls[0]
    assert call.json_mode
    assert call.options == ChatOptions(max_tokens=GROUNDING_MAX_TOKENS)
    prompt = call.messages[0].content
    assert "(document d1) The Eiffel Tower is 330 metres tall." in prompt
    assert QUESTION in prompt
    assert "Claims" not in prompt
    html = HtmlFormatter().format(report, include_details=True)
    assert "It was built in 1889" in html
    assert "not_found" in html


async def test_tool_results_and_context_passages_are_grounding_too() -> None:
    sample = EvaluationSample(
        "weather", ["Weather?"], None, metadata={"context": ["Mysore is in Karnataka."]}
    )

    def target(question: str) -> str:
        record_tool_call("get_weather", {"city": "Mysore"}, result={"temp": 31, "sky": "clear"})
        return "It is 31 degrees in Mysore, Karnataka."

    judge = FakeChatModel([claims(("31 degrees", "supported"), ("in Karnataka", "supported"))])
    report = await Scorer().evaluate([sample], target, FaithfulnessStrategy(judge))
    (row,) = report.evaluations
    assert row.outcome is Outcome.PASSED
    assert row.score == 1.0
    prompt = judge.calls[0].messages[0].content
    assert '(tool get_weather returned) {"sky": "clear", "temp": 31}' in prompt
    assert "Mysore is in Karnataka." in prompt
    assert "grounding_truncated" not in row.metadata


async def test_a_long_grounding_is_cut_to_the_budget_and_the_row_says_so() -> None:
    sample = EvaluationSample("long", ["q"], None, metadata={"context": ["x" * 500, "y" * 500]})
    judge = FakeChatModel([claims(("x", "supported"))])
    report = await Scorer().evaluate(
        [sample], lambda q: "x", FaithfulnessStrategy(judge, budget=600)
    )
    (row,) = report.evaluations
    assert row.metadata["grounding_truncated"] is True
    assert row.metadata["grounding_chars"] == 1000
    assert row.metadata["budget"] == 600
    prompt = judge.calls[0].messages[0].content
    assert "y" * 100 + "…" in prompt and "y" * 101 not in prompt
    assert "cut to 600 characters" in (row.explanation or "")


@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        (["not json", "still not json"], "could not be read, even when asked again"),
        ([claims()], "no factual claim"),
        (['{"claims": [{"claim": "x", "verdict": "maybe"}]}'] * 2, 'no valid "verdict"'),
    ],
)
async def test_no_claims_or_an_unreadable_reply_is_unscored_and_counted(
    replies: list[str], reason: str
) -> None:
    judge = FakeChatModel(replies)
    report = await Scorer().evaluate([SAMPLE], retrieving_target, FaithfulnessStrategy(judge))
    (row,) = report.evaluations
    assert row.outcome is Outcome.UNSCORED
    assert row.score is None
    assert reason in (row.explanation or "")
    assert report.unscored_count == 1
    assert len(judge.calls) == len(replies)


@pytest.mark.parametrize("strategy", [FaithfulnessStrategy, ContextRecallStrategy])
async def test_without_any_grounding_the_judge_is_not_asked_and_the_row_is_unscored(
    strategy: Any,
) -> None:
    judge = FakeChatModel([claims(("The tower is 330 m tall", "supported"))])
    report = await Scorer().evaluate([SAMPLE], lambda q: "It is 330 m tall.", strategy(judge))
    (row,) = report.evaluations
    assert row.outcome is Outcome.UNSCORED and row.score is None
    assert (row.explanation or "").startswith("Nothing grounds the answer: nothing was retrieved")
    assert row.metadata["grounding_passages"] == 0
    assert judge.calls == []


async def test_context_recall_scores_the_attributed_statements() -> None:
    reply = {
        "statements": [
            {"statement": "330 metres", "attributed": True},
            {"statement": "iron", "attributed": False},
        ]
    }
    sample = EvaluationSample("eiffel", [QUESTION], "It is 330 metres tall, made of iron.")
    judge = FakeChatModel([json.dumps(reply)])
    report = await Scorer().evaluate([sample], retrieving_target, ContextRecallStrategy(judge))
    (row,) = report.evaluations
    assert row.score == 0.5
    assert row.outcome is Outcome.PASSED
    assert row.metadata["statements"] == reply["statements"]
    assert "made of iron" in judge.calls[0].messages[0].content


async def test_context_recall_without_a_reference_is_an_error_row_naming_the_fix() -> None:
    sample = EvaluationSample("bare", [QUESTION], None)
    report = await Scorer().evaluate(
        [sample], retrieving_target, ContextRecallStrategy(FakeChatModel())
    )
    (row,) = report.evaluations
    assert row.outcome is Outcome.ERROR
    assert "add expected-output to the sample" in (row.error.message if row.error else "")


@pytest.mark.parametrize(
    ("useful", "score"),
    [
        ([True, False], 1.0),
        ([False, True], 0.5),
        ([False, False], 0.0),
    ],
)
async def test_context_precision_is_the_average_precision_in_rank_order(
    useful: list[bool], score: float
) -> None:
    reply = {"documents": [{"document": i, "useful": u} for i, u in enumerate(useful, 1)]}
    judge = FakeChatModel([json.dumps(reply)])
    report = await Scorer().evaluate([SAMPLE], retrieving_target, ContextPrecisionStrategy(judge))
    (row,) = report.evaluations
    assert row.score == score
    assert [d["useful"] for d in row.metadata["documents"]] == useful


async def test_context_precision_is_unscored_without_documents_or_with_a_wrong_count() -> None:
    nothing = await Scorer().evaluate(
        [SAMPLE], lambda q: "x", ContextPrecisionStrategy(FakeChatModel())
    )
    assert nothing.evaluations[0].outcome is Outcome.UNSCORED
    assert "Nothing was retrieved" in (nothing.evaluations[0].explanation or "")
    judge = FakeChatModel(['{"documents": [{"document": 1, "useful": true}]}'])
    short = await Scorer().evaluate([SAMPLE], retrieving_target, ContextPrecisionStrategy(judge))
    assert short.evaluations[0].outcome is Outcome.UNSCORED
    assert "judged 1 documents, but 2 were retrieved" in (short.evaluations[0].explanation or "")


async def test_answer_relevancy_is_the_mean_cosine_with_the_real_question() -> None:
    vectors = {QUESTION: [1.0, 0.0], "How high is it?": [0.8, 0.6], "Where is it?": [0.0, 1.0]}
    judge = FakeChatModel([json.dumps({"questions": ["How high is it?", "Where is it?"]})])
    strategy = AnswerRelevancyStrategy(judge, FakeEmbedder(vectors), questions=2, threshold=0.3)
    report = await Scorer().evaluate([SAMPLE], retrieving_target, strategy)
    (row,) = report.evaluations
    assert row.score == pytest.approx(0.4)
    assert row.outcome is Outcome.PASSED
    assert row.metadata["similarities"] == pytest.approx([0.8, 0.0])
    assert "Write 2 different questions" in judge.calls[0].messages[0].content


async def test_answer_relevancy_of_an_evasion_is_unscored() -> None:
    judge = FakeChatModel(['{"questions": []}'])
    strategy = AnswerRelevancyStrategy(judge, FakeEmbedder())
    report = await Scorer().evaluate([SAMPLE], lambda q: "I cannot say.", strategy)
    assert report.evaluations[0].outcome is Outcome.UNSCORED
    assert report.unscored_count == 1


async def test_faithfulness_over_http_reads_a_verdict_and_counts_a_garbage_reply() -> None:
    from aeval.models.openai import OpenAIChatModel

    good = claims(("330 metres", "supported"))
    async with (
        OpenAICompatibleServer() as server,
        OpenAIChatModel("judge", base_url=server.base_url, backoff=0.01) as model,
    ):
        server.enqueue(good, "garbage", "more garbage")
        samples = [SAMPLE, EvaluationSample("second", [QUESTION], "330 m")]
        report = await Scorer(concurrency=1).evaluate(
            samples, retrieving_target, FaithfulnessStrategy(model)
        )
        sent: list[dict[str, Any]] = [json.loads(r.body) for r in server.requests]
    first, second = report.evaluations
    assert first.score == 1.0 and first.outcome is Outcome.PASSED
    assert second.outcome is Outcome.UNSCORED
    assert report.unscored_count == 1
    assert all(body["response_format"] == {"type": "json_object"} for body in sent)
    assert all(body["max_tokens"] == GROUNDING_MAX_TOKENS for body in sent)


def test_a_context_key_is_kept_in_metadata_and_a_bad_one_names_file_line_and_sample(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("- name: a\n  parameters: [q]\n  context: [one, two]\n")
    (sample,) = Samples.load_sync(good)
    assert sample.metadata["context"] == ["one", "two"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: a\n  parameters: [q]\n  context: {x: 1}\n")
    with pytest.raises(SampleLoadError) as info:
        Samples.load_sync(bad)
    assert "'context' must be a list of passages" in str(info.value)
    assert (info.value.line, info.value.sample) == (3, "a")


async def test_verdicts_are_read_in_other_spellings_and_the_cache_saves_the_second_call() -> None:
    judge = FakeChatModel([claims(("a", "Not found"), ("b", "SUPPORTED"))])
    strategy = FaithfulnessStrategy(judge, threshold=0.5, cache=JudgeCache(path=None))
    first = await Scorer().evaluate([SAMPLE], retrieving_target, strategy)
    second = await Scorer().evaluate([SAMPLE], retrieving_target, strategy)
    assert len(judge.calls) == 1
    for report in (first, second):
        (row,) = report.evaluations
        assert row.score == 0.5
        assert [c["verdict"] for c in row.metadata["claims"]] == ["not_found", "supported"]
    assert second.evaluations[0].metadata["cached"] is True
    assert first.evaluations[0].metadata["cached"] is False


async def test_a_reply_cut_off_at_max_tokens_is_not_asked_again_and_says_to_raise_it() -> None:
    cut = ChatResponse('{"claims": [{"claim": "The tow', metadata={"finish_reason": "length"})
    judge = FakeChatModel([cut])
    report = await Scorer().evaluate(
        [SAMPLE], retrieving_target, FaithfulnessStrategy(judge, max_tokens=8)
    )
    (row,) = report.evaluations
    assert row.outcome is Outcome.UNSCORED
    assert "raise max_tokens" in (row.explanation or "")
    assert len(judge.calls) == 1


async def test_faithfulness_runs_online_on_a_sample_of_the_watched_responses() -> None:
    from aeval.online import OnlineEvaluator
    from aeval.strategies import NotBlankStrategy

    judge = FakeChatModel(lambda call: claims(("The tower is 330 m tall", "supported")))
    sink = Rows()
    async with OnlineEvaluator(
        NotBlankStrategy(),
        FaithfulnessStrategy(judge),
        sample_rates={"FaithfulnessStrategy": 0.25},
        seed=3,
        sink=sink,
    ) as online:
        watched = online.watch(retrieving_target)
        for _ in range(40):
            watched(QUESTION)
        await online.join()
        stats = online.statistics()
    assert (stats.evaluated, stats.sampled_out) == (40, 0)
    assert sum(row.strategy == "NotBlankStrategy" for row in sink.rows) == 40
    judged = [row for row in sink.rows if row.strategy == "FaithfulnessStrategy"]
    assert 0 < len(judged) < 40 and len(judge.calls) == len(judged)
    assert stats.strategies_sampled_out == 40 - len(judged)
    assert all(row.outcome is Outcome.PASSED for row in judged)
    assert all(row.metadata["claims"][0]["verdict"] == "supported" for row in judged)
    assert all("(document d1)" in call.messages[0].content for call in judge.calls)


async def test_faithfulness_is_a_gate_target_judged_only_after_its_checks_pass() -> None:
    from aeval.strategies import ContainsStrategy, Gated

    judge = FakeChatModel(lambda call: claims(("The tower is 330 m tall", "supported")))
    gated = Gated(FaithfulnessStrategy(judge), after=[ContainsStrategy(must_contain="metres")])
    samples = [SAMPLE, EvaluationSample("blank", ["Anything?"], None)]

    def target(question: str) -> str:
        record_retrieval(DOCS, query=question)
        return "The Eiffel Tower is 330 metres tall." if question == QUESTION else "No idea."

    report = await Scorer().evaluate(samples, target, gated)
    outcomes = {row.name: row.outcome for row in report.evaluations}
    assert outcomes == {"eiffel": Outcome.PASSED, "blank": Outcome.SKIPPED}
    assert len(judge.calls) == 1
    passed = next(row for row in report.evaluations if row.name == "eiffel")
    assert passed.metadata["claims"] == [
        {"claim": "The tower is 330 m tall", "verdict": "supported"}
    ]
