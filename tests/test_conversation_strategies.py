"""The conversation strategies (aeval.strategies.conversation): EachTurn, the conversation
judge, and whole-conversation agent checks on a transcript's combined trace."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from aeval import (
    Conversation,
    EvaluationResult,
    EvaluationSample,
    Outcome,
    Scorer,
    ScriptedTurn,
    SimulatedUser,
    Transcript,
    Turn,
)
from aeval.strategies import (
    BudgetStrategy,
    ContainsStrategy,
    ConversationJudgeStrategy,
    EachTurn,
    NotBlankStrategy,
    ToolCalledStrategy,
    ToolPolicyStrategy,
    ToolSequenceStrategy,
)
from aeval.strategies.conversation import each_turn_sample, render_transcript
from aeval.testing import FakeChatModel
from aeval.trace import ToolCall, Trace, current, using

pytestmark = pytest.mark.anyio


def calls(*names: str, **arguments: Any) -> Trace:
    return Trace(tool_calls=tuple(ToolCall(name, arguments.get(name, {})) for name in names))


TRIP = Transcript(
    (
        Turn(
            "Plan a 3-day trip to Mysore",
            "Day 1: Mysore Palace. The bus costs 350 rupees.",
            calls("get_weather", "find_attractions"),
        ),
        Turn("Make it cheaper: my budget is 5000 rupees", "Here is a 5000 rupee plan.", None),
        Turn(
            "How much is the bus?",
            "The bus from Bangalore costs 350 rupees.",
            calls("get_ticket_price", get_ticket_price={"origin": "Bangalore"}),
        ),
    )
)

SCRIPTED = EvaluationSample(
    "trip",
    metadata={"tool_fixtures": {"note": "kept"}},
    turns=[
        ScriptedTurn(
            "Plan a 3-day trip to Mysore",
            {"must_contain": ["Palace"], "expected_tools": ["get_weather"]},
        ),
        ScriptedTurn("Make it cheaper: my budget is 5000 rupees", {"must_contain": ["5000"]}),
        ScriptedTurn(
            "How much is the bus?",
            {"must_contain": ["350"], "expected_tools": ["get_ticket_price"]},
        ),
    ],
)


def test_each_turn_sample_holds_the_turns_expectations_and_its_user_message() -> None:
    first = each_turn_sample(SCRIPTED, 1, "Plan a 3-day trip to Mysore")
    assert first.name == "trip"
    assert first.parameters.as_dict() == {"question": "Plan a 3-day trip to Mysore"}
    assert dict(first.metadata) == {
        "tool_fixtures": {"note": "kept"},
        "must_contain": ["Palace"],
        "expected_tools": ["get_weather"],
    }
    second = each_turn_sample(SCRIPTED, 2, "Make it cheaper")
    assert "expected_tools" not in second.metadata
    assert second.metadata["must_contain"] == ["5000"]
    beyond = each_turn_sample(SCRIPTED, 7, "a simulated turn")
    assert "must_contain" not in beyond.metadata
    said = ScriptedTurn("hi", {"expected_output": "hello"})
    expected = EvaluationSample("e", turns=[said, "bye"])
    assert each_turn_sample(expected, 1, "hi").expected_output == "hello"
    assert each_turn_sample(expected, 2, "bye").expected_output is None


async def test_a_turns_own_list_replaces_the_conversations_for_that_turn() -> None:
    sample = EvaluationSample(
        "wide",
        metadata={"must_contain": ["rupees"]},
        turns=[ScriptedTurn("Plan", {"must_contain": ["Palace"]}), "Budget?"],
    )
    transcript = Transcript((Turn("Plan", "Mysore Palace"), Turn("Budget?", "5000 rupees")))
    result = await EachTurn(ContainsStrategy()).evaluate(sample, transcript)
    assert result.passed is True, result.explanation


async def test_each_turn_passes_when_every_turn_passes_with_the_turns_own_lists() -> None:
    result = await EachTurn(ContainsStrategy()).evaluate(SCRIPTED, TRIP)
    assert (result.passed, result.score) == (True, 1.0)
    assert result.explanation == "all 3 turns passed ContainsStrategy"
    assert result.metadata["failed_turn"] is None
    assert [v["outcome"] for v in result.metadata["turns"]] == ["passed"] * 3


async def test_each_turn_names_the_first_failing_turn_and_scores_the_share_passing() -> None:
    broken = Transcript(
        (
            TRIP.turns[0],
            Turn(TRIP.turns[1].user, "Here is a 9000 rupee plan."),
            Turn(TRIP.turns[2].user, "I do not know."),
        )
    )
    result = await EachTurn(ContainsStrategy()).evaluate(SCRIPTED, broken)
    assert result.passed is False
    assert result.score == pytest.approx(1 / 3)
    assert result.metadata["failed_turn"] == 2
    assert [v["outcome"] for v in result.metadata["turns"]] == ["passed", "failed", "failed"]
    assert result.explanation is not None
    assert result.explanation.startswith(
        "turn 2 of 3 ('Make it cheaper: my budget is 5000 rupees') did not pass ContainsStrategy: "
    )
    assert "5000" in result.explanation
    assert result.explanation.endswith("; 1 of 3 turns passed")


async def test_each_turn_gives_agent_strategies_each_turns_own_trace() -> None:
    result = await EachTurn(ToolCalledStrategy()).evaluate(SCRIPTED, TRIP)
    verdicts = result.metadata["turns"]
    # turn 2 states no expected-tools of its own: the check does not apply to it, and the
    # conversation passes on the two turns it applies to
    assert [v["outcome"] for v in verdicts] == ["passed", "not_applicable", "passed"]
    assert result.metadata["failed_turn"] is None
    assert (result.passed, result.score) == (True, 1.0)
    assert verdicts[1]["explanation"].startswith("Sample 'trip' states no expected-tools")
    assert result.explanation == (
        "all 2 applicable turns (1 not applicable) passed ToolCalledStrategy"
    )


async def test_a_turn_that_recorded_nothing_among_traced_turns_called_nothing() -> None:
    policy = await EachTurn(ToolPolicyStrategy(deny=["book_ticket"])).evaluate(SCRIPTED, TRIP)
    assert policy.passed is True, policy.explanation
    untraced = Transcript(tuple(Turn(turn.user, turn.assistant) for turn in TRIP.turns))
    missing = await EachTurn(ToolPolicyStrategy(deny=["book_ticket"])).evaluate(SCRIPTED, untraced)
    assert missing.passed is False
    assert missing.explanation is not None and "No trace was recorded" in missing.explanation


async def test_a_turn_without_an_answer_fails_with_a_clear_reason() -> None:
    ended = Transcript((TRIP.turns[0], Turn("and then?", None)), ended="error")
    result = await EachTurn(NotBlankStrategy()).evaluate(SCRIPTED, ended)
    assert result.passed is False
    assert result.metadata["failed_turn"] == 2
    assert result.explanation is not None
    assert "the turn has no answer: the target raised or ran out of time on it" in (
        result.explanation
    )


async def test_each_turn_of_a_single_turn_output_is_an_error_row_naming_the_fix() -> None:
    samples = [EvaluationSample("single", ["hi"])]
    report = await Scorer().evaluate(samples, lambda q: "hello", EachTurn(NotBlankStrategy()))
    [row] = report.evaluations
    assert row.outcome is Outcome.ERROR
    assert row.error is not None
    assert row.error.type == "TypeError"
    assert row.error.message.startswith(
        "EachTurn(NotBlankStrategy) judges conversations, but this row's output is str, "
        "not a Transcript: give it a conversation sample"
    )


class ThreadedTurnCheck:
    """A plain sync strategy: the Scorer runs it in a worker thread."""

    name = "ThreadedTurnCheck"

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[str, ...], bool]] = []

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        trace = current()
        names = () if trace is None else trace.tool_names()
        self.seen.append((output, names, threading.current_thread() is threading.main_thread()))
        return EvaluationResult.from_boolean(True)


class AsyncTurnCheck:
    name = "AsyncTurnCheck"

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.from_boolean("350" in output, f"{sample.name}: {output}")


async def test_each_turn_runs_sync_strategies_in_worker_threads_with_the_turns_trace() -> None:
    check = ThreadedTurnCheck()
    samples = [EvaluationSample("trip", ["ignored"])]
    report = await Scorer().evaluate(
        samples, lambda q: TRIP, EachTurn(check), EachTurn(AsyncTurnCheck())
    )
    rows = {row.strategy: row for row in report.evaluations}
    assert rows["EachTurn(ThreadedTurnCheck)"].outcome is Outcome.PASSED
    assert [(output, names) for output, names, _ in check.seen] == [
        (TRIP.turns[0].assistant, ("get_weather", "find_attractions")),
        (TRIP.turns[1].assistant, ()),
        (TRIP.turns[2].assistant, ("get_ticket_price",)),
    ]
    assert not any(on_main for _, _, on_main in check.seen)
    threaded = rows["EachTurn(AsyncTurnCheck)"]
    assert threaded.outcome is Outcome.FAILED
    assert threaded.metadata["failed_turn"] == 2
    assert threaded.score == pytest.approx(2 / 3)


async def test_each_turn_of_a_judge_counts_every_turns_calls_in_the_usage() -> None:
    from aeval.models import TokenUsage
    from aeval.strategies import AiJudgeStrategy
    from aeval.testing import FakeChatModel

    model = FakeChatModel(["true", "false", "true"], usage=TokenUsage(40, 2))
    judge = AiJudgeStrategy(model, "Question: {question}\nAnswer: {response}\nGood? true/false")
    report = await Scorer().evaluate([SCRIPTED], replay, EachTurn(judge))
    [row] = report.evaluations
    assert row.metadata["failed_turn"] == 2
    asked = [call.messages[-1].content for call in model.calls]
    assert [text.splitlines()[0] for text in asked] == [
        "Question: Plan a 3-day trip to Mysore",
        "Question: Make it cheaper: my budget is 5000 rupees",
        "Question: How much is the bus?",
    ]
    assert (row.metadata["prompt_tokens"], row.metadata["completion_tokens"]) == (120, 6)
    assert (report.usage.prompt_tokens, report.usage.completion_tokens) == (120, 6)


async def test_an_inner_error_is_an_error_row_naming_the_turn_with_its_retries() -> None:
    class Broken:
        def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
            if "from Bangalore" in output:
                error = ConnectionError("judge unreachable")
                error.retries = 2  # type: ignore[attr-defined]
                raise error
            return EvaluationResult.passing()

    report = await Scorer().evaluate([SCRIPTED], replay, EachTurn(Broken()))
    [row] = report.evaluations
    assert row.outcome is Outcome.ERROR
    assert row.error is not None
    assert str(row.error) == (
        "RuntimeError: EachTurn(Broken): the strategy raised on turn 3 ('How much is the "
        "bus?'): ConnectionError: judge unreachable"
    )
    assert report.usage.retries == 2


async def test_an_empty_transcript_fails() -> None:
    result = await EachTurn(NotBlankStrategy()).evaluate(SCRIPTED, Transcript())
    assert (result.passed, result.explanation) == (False, "the conversation has no turns")


def test_each_turn_repr_and_name() -> None:
    assert repr(EachTurn(ContainsStrategy())) == "EachTurn(strategy='ContainsStrategy')"
    assert EachTurn(ContainsStrategy(), name="turns").name == "turns"
    with pytest.raises(TypeError):
        EachTurn(42)


def test_whole_conversation_agent_checks_read_the_combined_trace() -> None:
    with using(TRIP.trace):
        sequence = ToolSequenceStrategy(
            ["get_weather", "find_attractions", "get_ticket_price"], order="exact"
        ).evaluate(SCRIPTED, TRIP)
        budget = BudgetStrategy(max_tool_calls=2).evaluate(SCRIPTED, TRIP)
    assert sequence.passed is True
    assert budget.passed is False
    assert budget.explanation is not None and "3" in budget.explanation


async def replay(conversation: Conversation) -> str:
    """A conversation target that gives TRIP's answers, turn by turn."""
    answer = TRIP.turns[conversation.turn - 1].assistant
    assert answer is not None
    return answer


# --- the conversation judge ------------------------------------------------------------------


def test_render_transcript_shows_each_turn_its_tools_and_the_ending() -> None:
    text = render_transcript(Transcript((TRIP.turns[0], Turn("more?", None)), ended="error"))
    assert text.startswith("Turn 1\nUser: Plan a 3-day trip to Mysore\nAssistant's tool calls:\n")
    assert "get_weather" in text and "find_attractions" in text
    assert "Turn 2\nUser: more?\nAssistant: (no answer: the assistant failed on this turn)" in text
    assert text.endswith("(The conversation ended: error.)")


async def test_conversation_judge_against_a_real_server_reads_the_whole_transcript() -> None:
    from aeval.models.openai import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    goal = EvaluationSample(
        "trip",
        user=SimulatedUser(
            "a student", "a trip under 5000 rupees", first=("Plan a 3-day trip to Mysore",)
        ),
    )
    user_model = FakeChatModel(
        ["Make it cheaper: my budget is 5000 rupees", "How much is the bus?", "GOAL REACHED"]
    )
    async with (
        OpenAICompatibleServer([Reply.text("True.", usage=(120, 2))]) as server,
        OpenAIChatModel("judge-model", base_url=server.base_url) as model,
    ):
        judge = ConversationJudgeStrategy(model, prices={"judge-model": (1, 2)})
        report = await Scorer(user_model=user_model).evaluate([goal], replay, judge)
        [request] = server.requests
    [row] = report.evaluations
    assert row.outcome is Outcome.PASSED
    prompt = request.messages[-1]["content"]
    assert "The user's goal: a trip under 5000 rupees" in prompt
    assert "1. The assistant reached the user's goal" in prompt
    assert "Turn 3\nUser: How much is the bus?" in prompt
    assert "Assistant: The bus from Bangalore costs 350 rupees." in prompt
    assert prompt.rstrip().endswith("Answer true if it did and false if it did not.")
    assert (report.usage.prompt_tokens, report.usage.completion_tokens) == (120, 2)
    assert row.metadata["criteria"][0].startswith("The assistant reached")
    assert isinstance(row.output, Transcript) and row.output.ended == "goal"
    assert len(user_model.calls) == 3


async def test_structured_conversation_judge_scores_on_its_scale_with_own_criteria() -> None:
    from aeval.models.openai import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    verdict = Reply.json({"score": 2, "explanation": "The budget was forgotten in turn 3."})
    async with (
        OpenAICompatibleServer([verdict]) as server,
        OpenAIChatModel("judge-model", base_url=server.base_url) as model,
    ):
        judge = ConversationJudgeStrategy(
            model, criteria=["The budget is kept."], structured=True, scale=(1, 5)
        )
        result = await judge.evaluate(SCRIPTED, TRIP)
        [request] = server.requests
    assert request.json["response_format"] == {"type": "json_object"}
    prompt = request.messages[-1]["content"]
    assert "1. The budget is kept." in prompt and "goal reached" not in prompt
    assert '"score": <a number from 1 to 5>' in prompt
    assert (result.passed, result.score) == (False, 0.25)
    assert result.explanation == "The budget was forgotten in turn 3."
    assert "criteria=['The budget is kept.']" in repr(judge)


async def test_the_conversation_judge_asks_once_per_identical_transcript_with_a_cache() -> None:
    from aeval import JudgeCache
    from aeval.models import TokenUsage

    model = FakeChatModel(["true"], usage=TokenUsage(100, 1))
    judge = ConversationJudgeStrategy(model, cache=JudgeCache(path=None))
    report = await Scorer(repeats=3, concurrency=1).evaluate([SCRIPTED], replay, judge)
    assert len(model.calls) == 1
    assert [row.outcome for row in report.evaluations] == [Outcome.PASSED] * 3
    assert sorted(row.metadata["cached"] for row in report.evaluations) == [False, True, True]
    assert report.usage.prompt_tokens == 100


async def test_an_unreadable_conversation_verdict_is_unscored_after_one_reask() -> None:
    from aeval.models.openai import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer

    async with (
        OpenAICompatibleServer(["It depends.", "Hard to say."]) as server,
        OpenAIChatModel("judge-model", base_url=server.base_url) as model,
    ):
        report = await Scorer().evaluate([SCRIPTED], replay, ConversationJudgeStrategy(model))
        assert len(server.requests) == 2
    [row] = report.evaluations
    assert row.outcome is Outcome.UNSCORED
    assert row.metadata["raw_reply"] == "Hard to say."


async def test_the_conversation_judge_of_a_single_turn_output_is_an_error_row() -> None:
    from aeval.testing import FakeChatModel

    model = FakeChatModel(["true"])
    report = await Scorer().evaluate(
        [EvaluationSample("one", ["hi"])], lambda q: "hello", ConversationJudgeStrategy(model)
    )
    [row] = report.evaluations
    assert row.outcome is Outcome.ERROR
    assert row.error is not None and "not a Transcript" in row.error.message
    assert model.calls == []


def test_conversation_judge_rejects_bad_criteria() -> None:
    from aeval.testing import FakeChatModel

    with pytest.raises(TypeError, match="criteria takes a list"):
        ConversationJudgeStrategy(FakeChatModel([]), criteria="be nice")
    with pytest.raises(ValueError, match="non-blank"):
        ConversationJudgeStrategy(FakeChatModel([]), criteria=["ok", " "])
    with pytest.raises(ValueError, match=r"holding \{response\} \(the transcript"):
        ConversationJudgeStrategy(FakeChatModel([]), prompt="Judge {criteria}")


# --- through the conversation engine -----------------------------------------------------------


async def planner(conversation: Conversation) -> str:
    """A conversation target that calls a tool on turns 1 and 3 and raises on a 'boom'."""
    from aeval.trace import record_tool_call

    if "boom" in conversation.last:
        raise RuntimeError("the planner fell over")
    if conversation.turn == 1:
        record_tool_call("get_weather", {"city": "Mysore"}, result="sunny")
        return "Mysore Palace, sunny"
    if conversation.turn == 3:
        record_tool_call("get_ticket_price", {"to": "Mysore"}, result="350")
        return "The bus is 350 rupees"
    return "A 5000 rupee plan"


async def test_through_the_engine_each_turn_sees_its_trace_and_the_whole_sees_all() -> None:
    report = await Scorer().evaluate(
        [SCRIPTED],
        planner,
        EachTurn(ContainsStrategy()),
        EachTurn(ToolCalledStrategy()),
        ToolSequenceStrategy(["get_weather", "get_ticket_price"], order="exact"),
        BudgetStrategy(max_tool_calls=1),
    )
    rows = {row.strategy: row for row in report.evaluations}
    assert rows["EachTurn(ContainsStrategy)"].outcome is Outcome.PASSED
    per_turn = rows["EachTurn(ToolCalledStrategy)"]
    # turn 2 states no expected-tools of its own: not applicable, the other turns pass
    assert per_turn.outcome is Outcome.PASSED
    assert [v["outcome"] for v in per_turn.metadata["turns"]] == [
        "passed",
        "not_applicable",
        "passed",
    ]
    assert rows["ToolSequenceStrategy"].outcome is Outcome.PASSED
    budget = rows["BudgetStrategy"]
    assert budget.outcome is Outcome.FAILED
    assert budget.trace is not None
    assert budget.trace.tool_names() == ("get_weather", "get_ticket_price")


async def test_through_the_engine_a_turn_that_raises_fails_each_turn_on_that_turn() -> None:
    sample = EvaluationSample("boom", turns=["Plan a trip to Mysore", "boom now", "never asked"])
    report = await Scorer().evaluate([sample], planner, EachTurn(NotBlankStrategy()))
    [row] = report.evaluations
    transcript = row.output
    assert isinstance(transcript, Transcript)
    assert transcript.ended == "error"
    assert [turn.assistant for turn in transcript.turns] == ["Mysore Palace, sunny", None]
    assert row.outcome is Outcome.ERROR
    assert row.error is not None and "the planner fell over" in row.error.message


async def test_a_custom_conversation_prompt_gets_criteria_goal_and_transcript() -> None:
    model = FakeChatModel(["false"])
    judge = ConversationJudgeStrategy(
        model,
        criteria=["Polite."],
        prompt="Criteria:\n{criteria}\n{goal}Transcript:\n{response}\nPass? true/false",
    )
    result = await judge.evaluate(SCRIPTED, Transcript((Turn("hi", "go away"),)))
    assert result.passed is False
    [call] = model.calls
    assert call.messages[-1].content == (
        "Criteria:\n1. Polite.\nTranscript:\nTurn 1\nUser: hi\nAssistant: go away\n\n"
        "(The conversation ended: script.)\nPass? true/false"
    )
