"""How a sample's parameters reach the function under test: Parameters whole, or bound to the
function's own signature (issues 9 and 32)."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import aeval
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
    assert "aeval passes a sample's values to the function's own parameters" in message
    assert "name its first parameter `params` (or annotate it `Parameters`)" in message


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


class _Bot:
    def chat(self, question: str) -> str:
        return question.upper()

    def __call__(self, question: str) -> str:
        return question.upper()


def _model_answer(question: str, model: str) -> str:
    return f"{model}:{question}"


def _whole(params):  # type: ignore[no-untyped-def]
    return params


def _whole_any(params: Any, lang: str = "en") -> Any:
    return params


def _whole_annotated(inputs: Parameters) -> Any:
    return inputs


def _whole_qualified(inputs: aeval.Parameters) -> Any:
    return inputs


def _params_typed(params: str) -> str:
    return params.upper()


def _params_and_more(params: str, other: str) -> str:
    return params + other


def _question(question):  # type: ignore[no-untyped-def]
    return question


def _positional_only(question: str, /) -> str:
    return question


def _question_any(question: Any) -> Any:
    return question


def _defaults(question: str, lang: str = "en") -> str:
    return f"{question}/{lang}"


def _star_args(*args: Any) -> tuple[Any, ...]:
    return args


def _star_kwargs(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def _both(question: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    return (question, args, kwargs)


_RULE: list[tuple[Callable[..., Any], list[Any] | dict[str, Any] | Parameters, object]] = [
    (_whole, ["a", "b"], Parameters(["a", "b"])),
    (_whole, ["a"], Parameters(["a"])),
    (_whole_any, {"q": "a"}, Parameters({"q": "a"})),
    (_whole_annotated, ["a"], Parameters(["a"])),
    (_whole_qualified, ["a"], Parameters(["a"])),
    (_params_typed, ["a"], "A"),
    (_params_and_more, ["a", "b"], "ab"),
    (_question, ["What is 2+2?"], "What is 2+2?"),
    (_question, {"question": "q"}, "q"),
    (_positional_only, ["q"], "q"),
    (_question_any, [{"role": "user"}], {"role": "user"}),
    (lambda question: question, ["q"], "q"),
    (_defaults, ["q"], "q/en"),
    (_defaults, ["q", "fr"], "q/fr"),
    (_defaults, {"lang": "de", "question": "q"}, "q/de"),
    (_star_args, ["a", "b"], ("a", "b")),
    (_star_args, [], ()),
    (_star_kwargs, {"a": 1}, {"a": 1}),
    (_both, Parameters.of("q", "x", k=1), ("q", ("x",), {"k": 1})),
    (_Bot().chat, ["q"], "Q"),
    (_Bot(), ["q"], "Q"),
    (functools.partial(_model_answer, model="m"), ["q"], "m:q"),
]


@pytest.mark.parametrize(("function", "parameters", "received"), _RULE)
async def test_what_each_signature_receives(
    function: Callable[..., Any],
    parameters: list[Any] | dict[str, Any] | Parameters,
    received: object,
) -> None:
    """The rule of docs/guide.md: the first parameter named ``params`` (with no other type) or
    annotated ``Parameters``, the others optional, gets the Parameters; any other function
    gets the values as a call binds them."""
    outputs: list[object] = []

    def keep(sample: EvaluationSample, output: object) -> EvaluationResult:
        outputs.append(output)
        return EvaluationResult.passing()

    for concurrency in (1, 4):  # the direct worker, and the general one for a sync target
        outputs.clear()
        sample = EvaluationSample("s", parameters, None)
        report = await Scorer(concurrency).evaluate([sample], function, keep)
        assert report.error_count == 0, report.evaluations[0].error
        assert outputs == [received]


async def test_a_one_parameter_async_function_gets_the_value() -> None:
    seen: list[list[str]] = []

    async def chat(question):  # type: ignore[no-untyped-def]
        seen.append(question)
        return question.copy()  # what the agent frameworks did with it

    samples = [
        EvaluationSample("list", [["hi"]], ["hi"]),
        EvaluationSample("named", {"question": ["hey"]}, ["hey"]),
    ]
    report = await Scorer(concurrency=2).evaluate(samples, chat, agrees)
    assert [row.outcome for row in report.evaluations] == [Outcome.PASSED] * 2
    assert sorted(seen) == [["hey"], ["hi"]]


async def test_a_sample_with_more_values_than_the_function_takes_is_one_error_naming_aeval() -> (
    None
):
    calls: list[object] = []

    async def chat(question):  # type: ignore[no-untyped-def]
        calls.append(question)
        return question

    samples = [EvaluationSample(f"fits {n}", ["q"], "q") for n in range(1000)]
    samples.append(EvaluationSample("two values", ["q", "context"], "q"))
    with pytest.raises(TypeError) as info:
        await Scorer(concurrency=4).evaluate(samples, chat, agrees)
    assert calls == []
    assert str(info.value) == (
        "The function under test "
        "test_a_sample_with_more_values_than_the_function_takes_is_one_error_naming_aeval"
        ".<locals>.chat(question) cannot take the parameters of sample 'two values' "
        "(Parameters(['q', 'context'])): too many positional arguments. aeval passes a "
        "sample's values to the function's own parameters (a list by position, a mapping by "
        "name): give the sample the values the function takes or the function a parameter "
        "for each value, or name its first parameter `params` (or annotate it `Parameters`) "
        "to receive the sample's Parameters whole."
    )


def _binding_error(function: Callable[..., Any], **values: Any) -> str:
    """What this interpreter's ``inspect`` says of binding ``values`` to ``function`` (its
    wording changed in 3.13), escaped for a pattern."""
    try:
        inspect.signature(function).bind(**values)
    except TypeError as error:
        return re.escape(str(error))
    raise AssertionError(f"{function.__name__} takes {values}")


@pytest.mark.parametrize(
    ("function", "parameters", "error"),
    [
        (_defaults, {"lang": "de"}, "missing a required argument: 'question'"),
        (_star_kwargs, ["a"], "too many positional arguments"),
        (_both, {"prompt": "q"}, "missing a required argument: 'question'"),
        (_question, {"prompt": "q"}, "missing a required argument: 'question'"),
        (_positional_only, {"question": "q"}, _binding_error(_positional_only, question="q")),
        (_question, {"question": "q", "lang": "fr"}, "got an unexpected keyword argument 'lang'"),
    ],
)
async def test_named_values_go_by_name_only(
    function: Callable[..., Any], parameters: list[Any] | dict[str, Any], error: str
) -> None:
    with pytest.raises(TypeError, match=rf"sample 's' \(.*\): {error}\. aeval passes"):
        await Scorer().evaluate([EvaluationSample("s", parameters, None)], function, agrees)


async def test_a_sample_with_no_value_for_a_one_parameter_function_is_refused() -> None:
    async def chat(question: str) -> str:
        return question

    with pytest.raises(TypeError, match=r"sample 'empty' \(Parameters\(\[\]\)\): missing a"):
        await Scorer().evaluate([EvaluationSample("empty", [], "x")], chat, agrees)


async def test_code_treating_the_parameters_as_a_value_is_told_about_aeval() -> None:
    async def chat(params):  # type: ignore[no-untyped-def]
        return params.copy()

    report = await Scorer().evaluate([EvaluationSample("s", ["q"], "q")], chat, agrees)
    (row,) = report.evaluations
    assert row.error is not None
    assert row.error.type == "AttributeError"
    assert row.error.message.startswith(
        "'Parameters' object has no attribute 'copy': this is aeval's Parameters, the "
        "parameters of a sample, which aeval passes whole to a function under test whose "
        "first parameter is named `params` or annotated `Parameters`."
    )
    assert not hasattr(Parameters(["q"]), "copy")
    with pytest.raises(AttributeError, match=r"^'Parameters' object has no attribute '_x'$"):
        Parameters(["q"])._x  # type: ignore[attr-defined]  # noqa: B018


async def test_the_binding_is_decided_once_per_run_not_per_sample() -> None:
    reads: list[int] = []

    class Counted:
        @property
        def __signature__(self) -> inspect.Signature:
            reads.append(1)
            return inspect.signature(lambda question: None)

        async def __call__(self, question: str) -> str:
            return question

    async def signature_reads(count: int) -> int:
        reads.clear()
        samples = [EvaluationSample(str(n), ["q"], "q") for n in range(count)]
        report = await Scorer(concurrency=4).evaluate(samples, Counted(), agrees)
        assert report.passed_count == count
        return len(reads)

    assert await signature_reads(1) == await signature_reads(200)
