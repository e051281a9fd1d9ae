"""The agent strategies (aeval.strategies.agent) and the judge's {trace} placeholder."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from _inline import runs_on_the_loop

from aeval import EvaluationResult, EvaluationSample
from aeval.strategies import (
    AiJudgeStrategy,
    BudgetStrategy,
    ToolArgumentsStrategy,
    ToolCalledStrategy,
    ToolPolicyStrategy,
    ToolSequenceStrategy,
)
from aeval.strategies.agent import lcs_length, sequence_f1
from aeval.testing import FakeChatModel
from aeval.trace import ModelCall, ToolCall, Trace, using

pytestmark = pytest.mark.anyio

SAMPLE = EvaluationSample(
    "trip",
    ["Plan a day in Mysore"],
    metadata={
        "expected_tools": ["get_weather", "get_attractions", "book_ticket"],
        "forbidden_tools": ["delete_booking"],
        "expected_tool_arguments": {"get_weather": {"city": "Mysore"}},
    },
)
BARE = EvaluationSample("bare", ["q"])


def trace_of(*names: str, **arguments: Any) -> Trace:
    return Trace(tool_calls=tuple(ToolCall(name, arguments.get(name, {})) for name in names))


def run(strategy: Any, trace: Trace | None, sample: EvaluationSample = SAMPLE) -> EvaluationResult:
    with using(trace):
        result = strategy.evaluate(sample, "answer")
    assert isinstance(result, EvaluationResult)
    return result


STRATEGIES = [
    ToolCalledStrategy("get_weather"),
    ToolPolicyStrategy(deny=["x"]),
    ToolSequenceStrategy(["a"]),
    ToolArgumentsStrategy("get_weather", {"city": "Mysore"}),
    BudgetStrategy(max_tool_calls=3),
]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: type(s).__name__)
def test_without_a_trace_a_strategy_fails_saying_how_to_record_one(strategy: Any) -> None:
    result = run(strategy, None)
    assert not result.passed and result.score == 0.0
    assert result.explanation is not None
    assert "No trace was recorded for sample 'trip'" in result.explanation
    assert "aeval.trace.capture()" in result.explanation and "@aeval.tool" in result.explanation


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: type(s).__name__)
def test_agent_strategies_run_inline(strategy: Any) -> None:
    assert runs_on_the_loop(strategy)


# --- ToolCalledStrategy ----------------------------------------------------------------------


def test_tool_called_counts_the_calls() -> None:
    trace = trace_of("get_weather", "get_weather", "book_ticket")
    assert run(ToolCalledStrategy("get_weather"), trace).passed
    assert run(ToolCalledStrategy("get_weather", min_calls=2, max_calls=2), trace).passed
    over = run(ToolCalledStrategy("get_weather", max_calls=1), trace)
    assert not over.passed
    assert over.explanation == (
        "Expected 'get_weather' to be called exactly 1 time; called 'get_weather' 2 times"
    )
    never = run(ToolCalledStrategy("search"), trace)
    assert (
        never.explanation
        == "Expected 'search' to be called at least 1 time; called 'search' 0 times"
    )


def test_tool_called_reads_the_sample_s_expected_tools() -> None:
    result = run(ToolCalledStrategy(), trace_of("get_weather", "book_ticket"))
    assert not result.passed
    assert result.score == pytest.approx(2 / 3)
    assert "'get_attractions'" in (result.explanation or "")
    missing = run(ToolCalledStrategy(), trace_of(), BARE)
    assert missing.inapplicable
    assert missing.explanation == (
        "Sample 'bare' states no expected-tools, so this check does not apply to it (to check "
        "it, add expected-tools: [...] to it, or pass name=)"
    )


def test_tool_called_checks_its_options() -> None:
    with pytest.raises(ValueError, match=r"max_calls \(1\) must not be below min_calls \(2\)"):
        ToolCalledStrategy("t", min_calls=2, max_calls=1)
    with pytest.raises(ValueError, match="min_calls must be an integer"):
        ToolCalledStrategy("t", min_calls=-1)


# --- ToolPolicyStrategy ----------------------------------------------------------------------


def test_tool_policy_denies_and_allows() -> None:
    trace = trace_of("get_weather", "delete_booking", "delete_booking", "search")
    denied = run(ToolPolicyStrategy(deny=["delete_booking"]), trace)
    assert (denied.passed, denied.score) == (False, 0.5)
    assert denied.explanation == "Called denied 1 tool: 'delete_booking'"
    allowed = run(ToolPolicyStrategy(allow=["get_weather", "delete_booking"]), trace)
    assert allowed.explanation == (
        "Called 1 tool not allowed: 'search' (allowed: 'delete_booking', 'get_weather')"
    )
    assert run(ToolPolicyStrategy(allow=["get_weather", "search", "delete_booking"]), trace).passed


def test_tool_policy_reads_the_sample_s_forbidden_tools() -> None:
    assert not run(ToolPolicyStrategy(), trace_of("delete_booking")).passed
    assert run(ToolPolicyStrategy(), trace_of("get_weather")).passed
    nothing = run(ToolPolicyStrategy(), trace_of("delete_booking"), BARE)
    assert nothing.passed and (nothing.explanation or "").startswith("Nothing to check")


def test_an_empty_trace_keeps_every_policy() -> None:
    assert run(ToolPolicyStrategy(deny=["x"]), Trace()).passed


# --- ToolSequenceStrategy --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "actual", "score"),
    [
        ("exact", ["a", "b", "c"], 1.0),
        ("exact", ["a", "c", "b"], 0.0),
        ("in_order", ["a", "x", "b", "c"], 2 * 3 / 7),
        ("in_order", ["c", "b", "a"], 2 * 1 / 6),
        ("any_order", ["c", "b", "a"], 1.0),
        ("any_order", ["a", "a", "a", "b", "c"], 2 * 3 / 8),
        ("any_order", [], 0.0),
    ],
)
def test_tool_sequence_scores(order: Any, actual: list[str], score: float) -> None:
    result = run(ToolSequenceStrategy(["a", "b", "c"], order=order), trace_of(*actual))
    assert result.score == pytest.approx(score)
    assert result.passed is (score == 1.0)


def test_tool_sequence_passes_from_its_threshold_and_explains() -> None:
    below = run(ToolSequenceStrategy(["a", "b"], threshold=0.6), trace_of("a", "c"))
    assert (below.passed, below.score) == (False, 0.5)
    strict = run(ToolSequenceStrategy(["a", "b"], threshold=0.6), trace_of("a", "x", "b"))
    assert strict.passed and strict.score == pytest.approx(0.8)
    assert strict.explanation == (
        "The calls ['a', 'x', 'b'] score 0.80 against the expected ['a', 'b'] (in order)"
    )


def test_tool_sequence_reads_the_sample_s_expected_tools() -> None:
    trace = trace_of("get_weather", "get_attractions", "book_ticket")
    assert run(ToolSequenceStrategy(order="exact"), trace).passed
    assert not run(ToolSequenceStrategy(), trace, BARE).passed


def test_tool_sequence_checks_its_options() -> None:
    with pytest.raises(ValueError, match="order must be"):
        ToolSequenceStrategy(["a"], order="sorted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold must be from 0 to 1"):
        ToolSequenceStrategy(["a"], threshold=1.5)


def test_sequence_scores_stay_within_0_and_1_with_retries_and_duplicates() -> None:
    rng = random.Random(2026)
    for _ in range(2000):
        expected = [rng.choice("abcd") for _ in range(rng.randint(0, 6))]
        actual = [rng.choice("abcde") for _ in range(rng.randint(0, 9))]
        for order in ("exact", "in_order", "any_order"):
            score = sequence_f1(expected, actual, order)
            assert 0.0 <= score <= 1.0
            assert (score == 1.0) is (
                expected == actual if order != "any_order" else Counter(expected) == Counter(actual)
            )
        assert sequence_f1(expected, actual, "in_order") <= sequence_f1(
            expected, actual, "any_order"
        )
        assert sequence_f1(expected, actual + actual, "any_order") <= 1.0


def test_lcs_length() -> None:
    assert lcs_length("abcbdab", "bdcaba") == 4
    assert lcs_length("", "abc") == 0


# --- ToolArgumentsStrategy -------------------------------------------------------------------


def test_tool_arguments_match_a_subset_or_exactly() -> None:
    trace = Trace(
        tool_calls=(
            ToolCall("get_weather", {"city": "Mysuru", "unit": "C"}),
            ToolCall("get_weather", {"city": "Mysore", "unit": "C"}),
        )
    )
    assert run(ToolArgumentsStrategy("get_weather", {"city": "Mysore"}), trace).passed
    exact = run(ToolArgumentsStrategy("get_weather", {"city": "Mysore"}, match="exact"), trace)
    assert not exact.passed
    assert exact.explanation == (
        "No call of 'get_weather' had get_weather(city='Mysore'): the closest, "
        "get_weather(city='Mysore', unit='C'), differs: 'unit' was not expected"
    )


def test_tool_arguments_name_the_first_mismatch() -> None:
    trace = Trace(tool_calls=(ToolCall("get_weather", {"city": "Mysuru"}),))
    result = run(ToolArgumentsStrategy("get_weather", {"city": "Mysore", "days": 2}), trace)
    assert not result.passed and result.score == 0.0
    assert result.explanation == (
        "No call of 'get_weather' had get_weather(city='Mysore', days=2): the closest, "
        "get_weather(city='Mysuru'), differs: 'city' is 'Mysuru', expected 'Mysore'"
    )
    never = run(ToolArgumentsStrategy("book", {"id": 1}), trace)
    assert never.explanation == "'book' was not called (called 'get_weather')"


def test_tool_arguments_read_the_sample_s_expectations() -> None:
    good = Trace(tool_calls=(ToolCall("get_weather", {"city": "Mysore"}),))
    assert run(ToolArgumentsStrategy(), good).passed
    assert run(ToolArgumentsStrategy("get_weather"), good).passed
    assert not run(ToolArgumentsStrategy(), good, BARE).passed
    with pytest.raises(ValueError, match="name the tool"):
        ToolArgumentsStrategy(None, {"city": "x"})


def test_an_empty_expected_tool_arguments_checks_nothing_and_passes() -> None:
    # A sample that expects no tool (expected-tool-arguments: {}) passes, where the check
    # does not apply to a sample without the key (which key to add and its shape said).
    none = EvaluationSample("scope", ["q"], metadata={"expected_tool_arguments": {}})
    result = run(ToolArgumentsStrategy(), Trace(), none)
    assert (result.passed, result.score) == (True, 1.0)
    assert result.explanation == "Nothing to check: sample 'scope' expects no tool's arguments"
    missing = run(ToolArgumentsStrategy(), Trace(), BARE)
    assert missing.inapplicable
    assert missing.explanation == (
        "Sample 'bare' states no expected-tool-arguments, so this check does not apply to it "
        "(to check it, add expected-tool-arguments: {...} to it, or pass expected=)"
    )


# --- BudgetStrategy --------------------------------------------------------------------------


def test_budgets() -> None:
    trace = Trace(
        tool_calls=(ToolCall("a"), ToolCall("b")),
        model_calls=(ModelCall("m", 100, 50), ModelCall("m", 10, 5)),
    )
    within = run(BudgetStrategy(max_tool_calls=2, max_model_calls=2, max_tokens=200), trace)
    assert within.passed
    over = run(BudgetStrategy(max_tool_calls=1, max_tokens=100, max_seconds=10), trace)
    assert not over.passed
    assert over.score == pytest.approx(1 / 3)
    assert over.explanation == "Over budget: 2 tool calls (budget 1); 165 tokens (budget 100)"
    with pytest.raises(ValueError, match="needs a budget"):
        BudgetStrategy()


def test_a_token_budget_never_counts_a_model_call_without_counts_as_0() -> None:
    streamed = Trace(model_calls=(ModelCall("m", 10, 5), ModelCall("m")))
    unknown = run(BudgetStrategy(max_model_calls=2, max_tokens=200), streamed)
    assert (unknown.passed, unknown.score) == (False, 0.5)
    assert unknown.explanation is not None
    assert unknown.explanation.startswith(
        "Over budget: tokens unknown: 1 of 2 model calls reported no token counts"
    )
    assert "stream_usage=True" in unknown.explanation
    assert unknown.metadata["uncounted_model_calls"] == 1
    over = run(BudgetStrategy(max_tokens=10), streamed)
    assert over.explanation == "Over budget: at least 15 tokens (budget 10)"
    assert run(BudgetStrategy(max_model_calls=2), streamed).passed


# --- the judge's {trace} ---------------------------------------------------------------------


async def test_the_judge_sees_the_trace() -> None:
    judge = FakeChatModel(["true", "true"])
    strategy = AiJudgeStrategy(judge, prompt="Answer: {response}\nTools used:\n{trace}\nOK?")
    trace = Trace(tool_calls=(ToolCall("get_weather", {"city": "Mysore"}, "sunny"),))
    with using(trace):
        await strategy.evaluate(SAMPLE, "It is sunny")
    await strategy.evaluate(SAMPLE, "It is sunny")
    first, second = (call.messages[-1].content for call in judge.calls)
    assert first == (
        'Answer: It is sunny\nTools used:\n1. tool get_weather(city="Mysore") -> "sunny"\nOK?'
    )
    assert "(no tool calls, model calls or retrievals were recorded)" in second
