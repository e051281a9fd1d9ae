"""Conversation samples in the Scorer: one target call per user turn, a transcript per row."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from rich.console import Console

import aeval
from aeval import (
    Conversation,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    Scorer,
    SimulatedUser,
    Transcript,
    read_run,
)
from aeval.formatters.json import report_from_json
from aeval.models import ChatResponse, OpenAIChatModel, TokenUsage
from aeval.strategies import ContainsStrategy
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply

pytestmark = pytest.mark.anyio


@aeval.tool
async def get_price(city: str) -> int:
    return {"Mysore": 300, "Goa": 900}[city]


async def travel_agent(conversation: Conversation) -> str:
    """Remembers the city across turns in its state and calls a tool each turn."""
    state = conversation.state
    text = conversation.last
    if "boom" in text:
        raise RuntimeError("the booking service is down")
    if text.startswith("Go to "):
        state["city"] = text.removeprefix("Go to ")
    price = await get_price(state.get("city", "Mysore"))
    return f"turn {conversation.turn} of {conversation.id}: {state.get('city')} costs {price}"


def answered(sample: EvaluationSample, output: Any) -> EvaluationResult:
    return EvaluationResult.from_boolean(
        isinstance(output, Transcript) and all(t.assistant for t in output.turns)
    )


async def test_a_scripted_conversation_calls_the_target_once_per_turn() -> None:
    seen: list[Conversation] = []

    async def target(conversation: Conversation) -> str:
        seen.append(conversation)
        return await travel_agent(conversation)

    sample = EvaluationSample("trip", turns=["Go to Goa", "How much?", "Go to Mysore"])
    report = await Scorer().evaluate([sample], target, answered)
    (row,) = report.evaluations
    assert row.passed
    transcript = row.output
    assert isinstance(transcript, Transcript) and transcript.ended == "script"
    assert [t.assistant for t in transcript.turns] == [
        "turn 1 of trip#0: Goa costs 900",
        "turn 2 of trip#0: Goa costs 900",
        "turn 3 of trip#0: Mysore costs 300",
    ]
    assert [len(c.messages) for c in seen] == [1, 3, 5]
    assert seen[2].messages[1] == {"role": "assistant", "content": transcript.turns[0].assistant}
    assert {c.id for c in seen} == {"trip#0"} and len({id(c.state) for c in seen}) == 1
    per_turn = [[call.arguments for call in t.trace.tool_calls] for t in transcript if t.trace]
    assert per_turn == [[{"city": "Goa"}], [{"city": "Goa"}], [{"city": "Mysore"}]]
    assert row.trace is not None and len(row.trace.tool_calls) == 3
    assert report.conversations == {"script": 1}


async def test_ten_repeats_are_deterministic_and_keep_one_row_each() -> None:
    samples = [
        EvaluationSample("trip", turns=["Go to Goa", "How much?"]),
        EvaluationSample("stay", turns=["Go to Mysore"]),
    ]
    report = await Scorer(repeats=10, concurrency=4).evaluate(
        samples, travel_agent, answered, ContainsStrategy(["costs"])
    )
    assert report.evaluation_count == 2 * 10 * 2 and report.passed_count == 40
    stats = report.repeat_statistics
    assert stats is not None and stats.flaky == () and stats.pass_hat_k[10] == 1.0
    assert {str(row.output).count("costs") for row in report.evaluations} == {1, 2}
    assert report.conversations == {"script": 20}


async def test_a_turn_that_raises_ends_the_conversation_keeping_the_turns_before() -> None:
    sample = EvaluationSample("crash", turns=["Go to Goa", "boom", "never sent"])
    report = await Scorer(tracebacks=False).evaluate(
        [sample], travel_agent, answered, ContainsStrategy(["x"])
    )
    assert [row.outcome.value for row in report.evaluations] == ["error", "error"]
    row = report.evaluations[0]
    assert row.error is not None and row.error.type == "RuntimeError"
    assert "the booking service is down" in row.error.message
    transcript = row.output
    assert isinstance(transcript, Transcript) and transcript.ended == "error"
    assert [(t.user, t.assistant) for t in transcript.turns] == [
        ("Go to Goa", "turn 1 of crash#0: Goa costs 900"),
        ("boom", None),
    ]
    assert row.trace is not None and len(row.trace.tool_calls) == 1
    again = EvaluationRow.from_dict(row.to_dict())
    assert again.output == transcript and again.error == row.error
    assert report.conversations == {"error": 1} and report.function_error_count == 1


async def test_a_turn_past_the_timeout_ends_the_conversation_as_timeout() -> None:
    never = anyio.Event()

    async def target(conversation: Conversation) -> str:
        if conversation.turn == 2:
            await never.wait()
        return "ok"

    sample = EvaluationSample("slow", turns=["one", "two", "three"])
    report = await Scorer(timeout=0.05).evaluate([sample], target, answered)
    (row,) = report.evaluations
    assert row.error is not None and row.error.type == "TimeoutError"
    assert row.error.message.startswith("turn 2: the function under test did not finish")
    assert isinstance(row.output, Transcript) and row.output.ended == "timeout"
    assert [t.assistant for t in row.output.turns] == ["ok", None]


async def test_the_conversation_timeout_bounds_the_whole_conversation() -> None:
    never = anyio.Event()

    async def target(conversation: Conversation) -> str:
        if conversation.turn == 3:
            await never.wait()
        return f"answer {conversation.turn}"

    sample = EvaluationSample("long", turns=["a", "b", "c"])
    report = await Scorer(conversation_timeout=0.05).evaluate([sample], target, answered)
    (row,) = report.evaluations
    assert row.error is not None and row.error.type == "TimeoutError"
    assert "conversation_timeout" in row.error.message
    assert "after 2 answered turn(s)" in row.error.message
    assert isinstance(row.output, Transcript) and row.output.ended == "timeout"
    assert [(t.user, t.assistant) for t in row.output.turns] == [
        ("a", "answer 1"),
        ("b", "answer 2"),
        ("c", None),
    ]
    with pytest.raises(ValueError, match="conversation_timeout must be a positive"):
        Scorer(conversation_timeout=0)


async def test_mismatched_samples_and_targets_are_refused_before_the_run() -> None:
    calls: list[object] = []

    async def single(question: str) -> str:
        calls.append(question)
        return question

    async def conversational(conversation: Conversation) -> str:
        calls.append(conversation)
        return "hi"

    conversation = EvaluationSample("chat", turns=["hi"])
    plain = EvaluationSample("plain", ["q"], "q")
    with pytest.raises(TypeError, match=r"Sample 'chat' is a conversation .*single takes"):
        await Scorer().evaluate([plain, conversation], single, answered)
    with pytest.raises(
        TypeError, match=r"Sample 'plain' is a single-turn sample, .*conversational takes"
    ):
        await Scorer().evaluate([conversation, plain], conversational, answered)
    assert calls == []

    async def whole(params: aeval.Parameters) -> str:
        calls.append(params)
        return "x"

    with pytest.raises(TypeError, match=r"Sample 'chat' is a conversation .*whole takes"):
        await Scorer().evaluate(_stream([plain, conversation]), whole, answered)
    assert calls == [plain.parameters]


async def test_a_simulated_user_without_a_user_model_is_an_error() -> None:
    sample = EvaluationSample("sim", user=SimulatedUser("p", "g", ("hi",), 3))
    with pytest.raises(TypeError, match=r"Sample 'sim' has a simulated user .*Scorer\(user_model="):
        await Scorer().evaluate([sample], travel_agent, answered)
    with pytest.raises(TypeError, match=r"Sample 'sim' has a simulated user .*Scorer\(user_model="):
        await Scorer().evaluate(_stream([sample]), travel_agent, answered)


async def _stream(samples: list[EvaluationSample]) -> Any:
    for sample in samples:
        yield sample


def _user_model(request: RecordedRequest) -> Reply:
    """Plays the user: asks for Mysore, then stops when the price is in the transcript."""
    transcript = request.messages[-1]["content"]
    if "Mysore costs" in transcript:
        return Reply("GOAL REACHED")
    if "stubborn" in request.messages[0]["content"]:
        return Reply("And Goa again?")
    if "mumbles" in request.messages[0]["content"]:
        return Reply("ok GOAL REACHED I think")
    return Reply("Go to Mysore")


async def test_simulated_users_stop_at_the_goal_or_at_max_turns_and_are_counted() -> None:
    samples = [
        EvaluationSample("goal", user=SimulatedUser("a traveller", "a price", ("Go to Goa",), 5)),
        EvaluationSample("max", user=SimulatedUser("stubborn", "never", ("Go to Goa",), 3)),
    ]
    async with (
        OpenAICompatibleServer(handler=_user_model) as server,
        OpenAIChatModel("user", base_url=server.base_url) as model,
    ):
        report = await Scorer(user_model=model).evaluate(samples, travel_agent, answered)
    goal, most = report.evaluations
    assert isinstance(goal.output, Transcript) and goal.output.ended == "goal"
    assert [t.user for t in goal.output.turns] == ["Go to Goa", "Go to Mysore"]
    assert isinstance(most.output, Transcript) and most.output.ended == "max-turns"
    assert [t.user for t in most.output.turns] == ["Go to Goa", "And Goa again?", "And Goa again?"]
    assert report.conversations == {"goal": 1, "max-turns": 1}
    # goal: asked after turns 1 and 2; max: asked after turns 1 and 2, not after the last
    assert report.usage.user_model_calls == 4 == len(server.requests)
    assert report.usage.prompt_tokens > 0 and report.usage.completion_tokens > 0
    assert goal.metadata["user_model"]["calls"] == 2
    prompt = server.requests[0].messages
    assert "a traveller" in prompt[0]["content"] and "GOAL REACHED" in prompt[0]["content"]
    assert "USER: Go to Goa" in prompt[1]["content"]
    for fmt in ("markdown", "html"):
        shown = report.format(fmt)
        assert "4 simulated-user calls" in shown, fmt
        assert "2 (1 goal reached, 1 at max turns)" in shown, fmt
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    report.print(console=console)
    printed = buffer.getvalue()
    assert "4 simulated-user calls" in printed and "1 goal reached, 1 at max turns" in printed


async def test_a_malformed_user_model_reply_is_an_error_row_quoting_it() -> None:
    sample = EvaluationSample("mumble", user=SimulatedUser("mumbles", "g", ("Go to Goa",), 4))
    async with (
        OpenAICompatibleServer(handler=_user_model) as server,
        OpenAIChatModel("user", base_url=server.base_url) as model,
    ):
        report = await Scorer(user_model=model).evaluate([sample], travel_agent, answered)
    (row,) = report.evaluations
    assert row.error is not None and row.error.type == "UserModelError"
    assert "'ok GOAL REACHED I think'" in row.error.message
    assert isinstance(row.output, Transcript) and row.output.ended == "error"
    assert len(row.output.turns) == 1 and row.output.turns[0].assistant is not None


class _HostileUserModel:
    """A user model whose reply for each persona is malformed in its own way."""

    model = "hostile"

    async def chat(self, messages: Any, *, json_mode: bool = False) -> Any:
        persona = messages[0].content
        if "persona-string" in persona:
            return "Go to Mysore"
        if "persona-none" in persona:
            return None
        if "persona-no-usage" in persona:
            return SimpleNamespace(text="Go to Mysore", usage=None, retries=0)
        if "persona-empty-counts" in persona:
            usage = SimpleNamespace(prompt_tokens=None, completion_tokens=None)
            return SimpleNamespace(text="GOAL REACHED", usage=usage, retries=0)
        if "persona-cancels" in persona:
            raise asyncio.CancelledError
        return ChatResponse("GOAL REACHED", TokenUsage(3, 2))


async def test_a_malformed_or_cancelling_user_model_gives_error_rows_and_the_run_goes_on() -> None:
    personas = [
        "persona-string",
        "persona-none",
        "persona-no-usage",
        "persona-empty-counts",
        "persona-cancels",
        "persona-sound",
    ]
    samples = [
        EvaluationSample(f"{persona} {i}", user=SimulatedUser(persona, "g", ("Go to Goa",), 4))
        for i in range(5)
        for persona in personas
    ]
    report = await Scorer(concurrency=4, user_model=_HostileUserModel()).evaluate(
        samples, travel_agent, answered
    )
    assert report.complete and len(report.evaluations) == 30
    outcomes = {
        row.name.rsplit(" ", 1)[0]: (row.error.type if row.error else row.outcome.value)
        for row in report.evaluations
    }
    assert outcomes == {
        "persona-string": "UserModelError",
        "persona-none": "UserModelError",
        "persona-no-usage": "passed",
        "persona-empty-counts": "passed",
        "persona-cancels": "UserModelError",
        "persona-sound": "passed",
    }
    by_name = {row.name: row for row in report.evaluations}
    assert "returned 'Go to Mysore' for user turn 2, not a chat response" in (
        by_name["persona-string 0"].error.message  # type: ignore[union-attr]
    )
    assert "StrayCancellation" in by_name["persona-cancels 0"].error.message  # type: ignore[union-attr]
    assert by_name["persona-empty-counts 0"].metadata["user_model"]["calls_without_usage"] == 1
    assert by_name["persona-sound 0"].metadata["user_model"]["prompt_tokens"] == 3


async def test_transcripts_round_trip_through_rows_jsonl_and_report_json(tmp_path: Path) -> None:
    samples = [
        EvaluationSample("ok", turns=["Go to Goa", "How much?"]),
        EvaluationSample("crash", turns=["Go to Goa", "boom"]),
    ]
    path = tmp_path / "rows.jsonl"
    async with JsonlSink(path) as sink:
        report = await Scorer(sinks=[sink], tracebacks=False).evaluate(
            samples, travel_agent, answered
        )
    stored = (await read_run(path))[0]
    assert [row.output for row in stored] == [row.output for row in report.evaluations]
    assert [row.trace for row in stored] == [row.trace for row in report.evaluations]
    again = report_from_json(report.format("json"))
    assert [row.output for row in again.evaluations] == [row.output for row in report.evaluations]
    assert again.conversations == {"script": 1, "error": 1}
    assert again.usage == report.usage


async def _peak_memory(conversations: int, concurrency: int) -> tuple[int, int]:
    """The tracemalloc peak of a run of ``conversations`` three-turn conversations, and the
    most conversations that were in flight at once (all ``concurrency`` of them are held at
    their first turn until that many have started)."""
    import tracemalloc

    started = anyio.Event()
    state = {"open": 0, "most": 0}

    async def target(conversation: Conversation) -> str:
        if conversation.turn == 1:
            state["open"] += 1
            state["most"] = max(state["most"], state["open"])
            if state["open"] >= concurrency:
                started.set()
            await started.wait()
        if conversation.turn == 3:
            state["open"] -= 1
        return f"answer {conversation.turn} " + "x" * 200

    samples = (
        EvaluationSample(f"c{number}", turns=["one", "two", "three"])
        for number in range(conversations)
    )
    tracemalloc.start()
    try:
        report = await Scorer(concurrency=concurrency, keep="none").evaluate(
            samples, target, answered
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.passed_count == conversations and report.conversations == {
        "script": conversations
    }
    return peak, state["most"]


async def test_a_thousand_concurrent_conversations_keep_memory_flat() -> None:
    one_round, most = await _peak_memory(1000, 1000)
    assert most == 1000
    three_rounds, _ = await _peak_memory(3000, 1000)
    # what grows with the number of conversations run (not in flight) would triple the peak
    assert three_rounds < 1.5 * one_round


async def test_rescoring_a_stored_run_judges_its_transcripts_again(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    samples = [EvaluationSample("trip", turns=["Go to Goa", "Go to Mysore"])]
    async with JsonlSink(path) as sink:
        await Scorer(sinks=[sink]).evaluate(samples, travel_agent, answered)
    seen: list[Any] = []

    def mysore_last(sample: EvaluationSample, output: Any) -> EvaluationResult:
        seen.append(output)
        return EvaluationResult.from_boolean("Mysore" in output.last)

    report = await Scorer().rescore(path, mysore_last)
    (row,) = report.evaluations
    assert row.passed and isinstance(seen[0], Transcript) and len(seen[0]) == 2
    assert row.trace is not None and len(row.trace.tool_calls) == 2


async def same_every_repeat(conversation: Conversation) -> str:
    city = conversation.last.removeprefix("Go to ")
    return f"{city} costs {await get_price(city)}"


async def test_the_user_cache_asks_once_per_transcript_and_counts_every_call() -> None:
    from aeval import JudgeCache

    sample = EvaluationSample("goal", user=SimulatedUser("a traveller", "a price", ("Go to Goa",)))
    async with (
        OpenAICompatibleServer(handler=_user_model) as server,
        OpenAIChatModel("user", base_url=server.base_url) as model,
    ):
        scorer = Scorer(user_model=model, user_cache=JudgeCache(None), repeats=3)
        report = await scorer.evaluate([sample], same_every_repeat, answered)
    assert len(server.requests) == 2  # the first repeat asks; the others are served
    assert report.usage.user_model_calls == 6 and report.conversations == {"goal": 3}
    first, *others = report.evaluations
    assert first.metadata["user_model"]["cached"] == 0
    assert [row.metadata["user_model"]["cached"] for row in others] == [2, 2]
    assert all(row.metadata["user_model"]["prompt_tokens"] == 0 for row in others)
    assert report.usage.prompt_tokens == first.metadata["user_model"]["prompt_tokens"] > 0
    with pytest.raises(TypeError, match=r"user_cache must be an aeval\.JudgeCache"):
        Scorer(user_model=model, user_cache="cache.sqlite")
