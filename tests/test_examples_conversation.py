"""examples/travel_conversation.py runs offline, deterministically over 10 repeats, and catches
an agent that forgets the budget on the third turn."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from aeval import Outcome, Transcript

EXAMPLES = Path(__file__).parent.parent / "examples"

pytestmark = pytest.mark.anyio


def example() -> dict[str, Any]:
    module = runpy.run_path(str(EXAMPLES / "travel_conversation.py"), run_name="travel_conv")
    sys.modules.pop("travel_agent", None)
    return module


def said(transcript: object) -> tuple[object, ...]:
    """What a transcript says and does, without its timings."""
    assert isinstance(transcript, Transcript)
    return tuple(
        (
            turn.user,
            turn.assistant,
            tuple(
                (call.name, tuple(call.arguments.items()), call.result)
                for call in (turn.trace.tool_calls if turn.trace else ())
            ),
        )
        for turn in transcript.turns
    )


async def test_the_conversation_passes_every_check_on_every_repeat_and_none_is_flaky(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = await example()["main"](tmp_path)
    assert "Evaluation summary" in capsys.readouterr().out
    assert report.score == 100.0
    strategies = {row.strategy for row in report.evaluations}
    assert strategies == {
        "EachTurn(ContainsStrategy)",
        "EachTurn(ToolCalledStrategy)",
        "EachTurn(ToolPolicyStrategy)",
        "ToolSequenceStrategy",
        "ToolArgumentsStrategy",
        "BudgetStrategy",
        "ConversationJudgeStrategy",
    }
    assert len(report.evaluations) == 10 * len(strategies)
    assert report.flaky == ()
    transcripts = {row.repeat: row.output for row in report.evaluations}
    assert sorted(transcripts) == list(range(10))
    first = transcripts[0]
    assert isinstance(first, Transcript)
    assert len({said(transcript) for transcript in transcripts.values()}) == 1
    assert [turn.user for turn in first.turns] == [
        "Plan a 2-day trip to Mysore",
        "Make it cheaper: my budget is ₹3,000",
        "How much is the bus?",
    ]
    assert first.ended == "script"
    assert [turn.trace.tool_names() for turn in first.turns if turn.trace] == [
        ("get_weather", "find_attractions", "get_ticket_price"),
        ("get_ticket_price",),
        ("get_ticket_price",),
    ]
    assert first.last == (
        "The bus from Bangalore to Mysore: Cheapest: KSRTC bus ₹180, journey 3 hours. "
        "That keeps you within your ₹3,000 budget."
    )
    assert report.usage.prompt_tokens > 0  # the judge's calls are counted
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "#### Conversation" in markdown and "##### Turn 3 · passed" in markdown


async def test_an_agent_that_forgets_the_budget_fails_on_turn_three() -> None:
    report = await example()["evaluate"](remembers_budget=False, repeats=2)
    rows = {row.strategy: row for row in report.evaluations if row.repeat == 0}
    contains = rows["EachTurn(ContainsStrategy)"]
    assert contains.outcome is Outcome.FAILED
    assert contains.metadata["failed_turn"] == 3
    assert contains.score == pytest.approx(2 / 3)
    assert contains.explanation is not None
    assert contains.explanation.startswith(
        "turn 3 of 3 ('How much is the bus?') did not pass ContainsStrategy"
    )
    assert "₹3,000" in contains.explanation
    assert rows["ConversationJudgeStrategy"].outcome is Outcome.FAILED
    assert rows["ToolSequenceStrategy"].outcome is Outcome.PASSED
    assert report.flaky == ()


async def test_the_example_runs_as_a_script() -> None:
    environment = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    script = str(EXAMPLES / "travel_conversation.py")
    done = await anyio.run_process([sys.executable, script], env=environment, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert "EachTurn(ContainsStrategy)" in done.stdout.decode()
