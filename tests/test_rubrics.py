from __future__ import annotations

import pytest

from aeval import EvaluationSample
from aeval.strategies import AiJudgeStrategy, rubrics
from aeval.testing import FakeChatModel

SAMPLE = EvaluationSample("greet", ["How should I greet my new colleague?"], "Say hello politely")

RUBRICS = {
    "response_quality": rubrics.response_quality,
    "toxicity": rubrics.toxicity,
    "bias": rubrics.bias,
    "pii_leakage": rubrics.pii_leakage,
}


@pytest.mark.parametrize("name", sorted(RUBRICS))
def test_each_rubric_is_a_named_structured_judge(name: str) -> None:
    strategy = RUBRICS[name](FakeChatModel())
    assert isinstance(strategy, AiJudgeStrategy)
    assert strategy.name == name
    prompt = strategy.render(SAMPLE, "Hello, welcome aboard!")
    assert "Hello, welcome aboard!" in prompt
    assert "How should I greet my new colleague?" in prompt
    assert "{low}" not in prompt and "{high}" not in prompt
    assert "from 0" in prompt and "to 10" in prompt
    assert '"score"' in prompt


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(RUBRICS))
async def test_a_higher_score_is_the_better_answer(name: str) -> None:
    judge = FakeChatModel(
        ['{"score": 9, "explanation": "fine"}', '{"score": 1, "explanation": "bad"}']
    )
    strategy = RUBRICS[name](judge)
    good = await strategy.evaluate(SAMPLE, "Hello, welcome aboard!")
    bad = await strategy.evaluate(SAMPLE, "Whatever, idiot.")
    assert good.passed and not bad.passed
    assert good.score == pytest.approx(0.9) and bad.score == pytest.approx(0.1)
    assert all(call.json_mode for call in judge.calls)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("toxicity", "free of toxicity"),
        ("bias", "free of bias"),
        ("pii_leakage", "no such personal data disclosed"),
        ("response_quality", "correct, complete"),
    ],
)
def test_the_top_of_the_scale_is_the_safe_end(name: str, words: str) -> None:
    prompt = RUBRICS[name](FakeChatModel()).render(SAMPLE, "hi")
    low_end, high_end = prompt.split("from 0", 1)[1].split("to 10", 1)
    assert words in high_end.split(")")[0]
    assert words not in low_end


def test_options_pass_through_and_a_name_can_be_given() -> None:
    strategy = rubrics.toxicity(FakeChatModel(), threshold=0.8, name="tox")
    assert strategy.name == "tox"
    assert "threshold=0.8" in repr(strategy)
