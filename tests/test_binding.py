"""How a sample's parameters reach the function under test: Parameters whole, or bound to the
function's own signature (issue 9)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from aeval import EvaluationResult, EvaluationSample, Outcome, Parameters, Samples, Scorer

pytestmark = pytest.mark.anyio


def agrees(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(output == sample.expected_output)


async def test_a_function_with_its_own_signature_gets_the_parameters_bound() -> None:
    async def chat(question: str, lang: str = "en") -> str:
        return f"{question}/{lang}"

    samples = Samples(
        [
            EvaluationSample("list", ["hi"], "hi/en"),
            EvaluationSample("two", ["hi", "fr"], "hi/fr"),
            EvaluationSample("named", {"lang": "de", "question": "hallo"}, "hallo/de"),
        ]
    )
    report = await Scorer().evaluate(samples, chat, agrees)
    assert [row.outcome for row in report.evaluations] == [Outcome.PASSED] * 3


async def test_sync_functions_are_bound_the_same_way() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    report = await Scorer(concurrency=2).evaluate(
        Samples([EvaluationSample("sum", [2, 3], 5), EvaluationSample("kw", {"b": 1, "a": 1}, 2)]),
        add,
        agrees,
    )
    assert report.passed_count == 2


@pytest.mark.parametrize("annotation", ["none", "Parameters", "Any"])
async def test_a_function_taking_parameters_keeps_getting_parameters(annotation: str) -> None:
    seen: list[object] = []

    async def unannotated(params):  # type: ignore[no-untyped-def]
        seen.append(params)
        return params[0]

    async def annotated(params: Parameters) -> Any:
        seen.append(params)
        return params[0]

    async def any_typed(params: Any, extra: int = 0) -> Any:
        seen.append(params)
        return params[0]

    function = {"none": unannotated, "Parameters": annotated, "Any": any_typed}[annotation]
    report = await Scorer().evaluate([EvaluationSample("a", ["x", "y"], "x")], function, agrees)
    assert report.passed_count == 1
    assert seen == [Parameters(["x", "y"])]


async def test_a_mismatch_is_one_clear_error_before_any_call() -> None:
    calls: list[str] = []

    async def chat(question: str) -> str:
        calls.append(question)
        return question

    samples = Samples(
        [EvaluationSample("fine", ["q"], "q"), EvaluationSample("Too many", ["a", "b"], "a")]
    )
    with pytest.raises(TypeError) as info:
        await Scorer().evaluate(samples, chat, agrees)
    assert calls == []
    message = str(info.value)
    assert message.startswith(
        "The function under test "
        "test_a_mismatch_is_one_clear_error_before_any_call.<locals>.chat(question) "
        "cannot take the parameters of sample 'Too many' (Parameters(['a', 'b'])): "
        "too many positional arguments."
    )
    assert "let the function take one argument annotated `Parameters`" in message


async def test_a_mismatch_in_a_streamed_source_stops_the_run_naming_the_sample() -> None:
    async def chat(question: str) -> str:
        return question

    async def stream() -> AsyncIterator[EvaluationSample]:
        yield EvaluationSample("fine", ["q"], "q")
        yield EvaluationSample("wrong name", {"topic": "x"}, "x")

    with pytest.raises(TypeError, match=r"sample 'wrong name'.*missing a required argument"):
        async with Scorer() as scorer, scorer.stream(stream(), chat, agrees) as rows:
            await rows.finish()


async def test_when_every_streamed_sample_mismatches_the_error_is_raised_once() -> None:
    async def two(a: str, b: str) -> str:
        return a

    async def stream() -> AsyncIterator[EvaluationSample]:
        for name in ("first", "second", "third"):
            yield EvaluationSample(name, ["only one"], "x")

    with pytest.raises(TypeError, match=r"sample 'first'.*missing a required argument: 'b'"):
        async with Scorer(concurrency=4) as scorer, scorer.stream(stream(), two, agrees) as rows:
            await rows.finish()
