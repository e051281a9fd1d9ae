"""Seed 003's travel agent over a conversation: plan a trip, change the budget, ask for the bus.

Run it from the repository root:

    python examples/travel_conversation.py

The agent is travel_agent.py's tool-calling loop; here its target takes an
:class:`aeval.Conversation` (the history so far, the new user message last) and answers the
last message, so the Scorer calls it once per user turn of ``travel_conversation.yaml``'s
scripted conversation. The failures worth catching show up on the third turn: "How much is
the bus?" must call ``get_ticket_price`` for the trip planned on turn 1 and keep the budget
given on turn 2.

Offline and deterministic: the model is ``aeval.testing.OpenAICompatibleServer`` on
127.0.0.1 answering from a script (:func:`conversation_model`), the tools are served from the
sample's ``tools:`` fixtures (``Scorer(tools="fixtures")``), and the conversation judge is a
scripted stand-in (:func:`budget_judge`) for a real judge model. Every conversation is run 10
times, and none may be flaky.

The checks:

- per turn, with ``EachTurnStrategy``: each turn's ``must-contain``, ``expected-tools`` and (turn 3)
  ``expected-tool-arguments``, and ``forbidden-tools`` on every turn;
- on the whole conversation: the tool sequence over all turns, a budget of tool and model
  calls, and a ``ConversationJudgeStrategy`` with one criterion, the budget kept.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import anyio

import aeval
from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.models import OpenAIChatModel
from aeval.strategies import (
    BudgetStrategy,
    ContainsStrategy,
    ConversationJudgeStrategy,
    EachTurnStrategy,
    ToolArgumentsStrategy,
    ToolCalledStrategy,
    ToolPolicyStrategy,
    ToolSequenceStrategy,
)
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from travel_agent import (  # noqa: E402
    _HOME,
    _TRIP,
    MODEL,
    TravelAgent,
    _answer,
    _plan,
    _results,
)

REPEATS = 10
_BUDGET = re.compile(r"budget is (?P<budget>₹[\d,]+)")
_ROUTE_PRICE = "get_ticket_price"


# --- the agent as a conversation target -----------------------------------------------------


class ConversationalAgent:
    """travel_agent.py's agent, answering the last message of a conversation."""

    def __init__(self, agent: TravelAgent) -> None:
        self._agent = agent

    async def reply(self, conversation: aeval.Conversation) -> str:
        """Answer the conversation's last user message, with the history as context."""
        return await self._agent.complete(conversation.messages)


# --- the scripted model ---------------------------------------------------------------------


def _latest(pattern: re.Pattern[str], texts: list[str], group: str) -> str | None:
    for text in reversed(texts):
        if match := pattern.search(text):
            return match[group]
    return None


def conversation_model(request: RecordedRequest, *, remembers_budget: bool = True) -> Reply:
    """The scripted model: answers the last user message, reading the earlier ones for the
    trip's city and the budget (``remembers_budget=False`` plays a model that forgets it)."""
    messages = request.messages
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    question = str(messages[last]["content"])
    earlier = [str(m["content"]) for m in messages[:last] if m.get("role") == "user"]
    results = _results(messages[last + 1 :])
    if _TRIP.search(question):
        rounds = _plan(question)
    else:
        city = _latest(_TRIP, earlier, "city")
        if city is None:
            return Reply.text("Tell me where you would like to go first.")
        rounds = [[(_ROUTE_PRICE, {"origin": _HOME, "destination": city})]]
    for calls in rounds:
        pending = [call for call in calls if call[0] not in results]
        if pending:
            return Reply.calling(*pending)
    if _TRIP.search(question):
        return Reply.text(_answer(question, results))
    remembered = [*earlier, question] if remembers_budget else [question]
    budget = _latest(_BUDGET, remembered, "budget")
    price = results[_ROUTE_PRICE].rstrip(".")
    if _BUDGET.search(question):
        return Reply.text(
            f"Within your {budget} budget for {city}: go by bus ({price}) and see the free "
            "sights first."
        )
    kept = f" That keeps you within your {budget} budget." if budget else ""
    return Reply.text(f"The bus from {_HOME} to {city}: {price}.{kept}")


def budget_judge(request: RecordedRequest) -> Reply:
    """A scripted stand-in for a judge model: passes a conversation whose last answer still
    states the budget the user gave (a real judge reads the same prompt)."""
    prompt = str(request.messages[-1]["content"])
    budgets = _BUDGET.findall(prompt)
    answers = re.findall(r"^Assistant: (.*)$", prompt, flags=re.MULTILINE)
    if budgets and answers and budgets[-1] in answers[-1]:
        return Reply.json({"score": 5, "passed": True, "explanation": "The budget was kept."})
    return Reply.json(
        {"score": 1, "passed": False, "explanation": "The last answer forgot the budget."}
    )


# --- the evaluation -------------------------------------------------------------------------


async def evaluate(
    *, remembers_budget: bool = True, repeats: int = REPEATS, output_dir: Path | None = None
) -> EvaluationReport:
    """Run the conversation ``repeats`` times against the scripted model and judge it."""
    samples = await Samples.load(HERE / "travel_conversation.yaml")
    model = functools.partial(conversation_model, remembers_budget=remembers_budget)
    async with (
        OpenAICompatibleServer(handler=model, model=MODEL) as server,
        OpenAICompatibleServer(handler=budget_judge, model="judge") as judge_server,
        OpenAIChatModel("judge", base_url=judge_server.base_url) as judge,
        TravelAgent(server.base_url) as agent,
        Scorer(concurrency=4, timeout=30, tools="fixtures", repeats=repeats) as scorer,
    ):
        report = await scorer.evaluate(
            samples,
            ConversationalAgent(agent).reply,
            # each turn, against that turn's own expectations and trace
            EachTurnStrategy(ContainsStrategy(case_sensitive=False)),
            EachTurnStrategy(ToolCalledStrategy()),
            EachTurnStrategy(ToolPolicyStrategy()),
            # the whole conversation, on every turn's calls
            ToolSequenceStrategy(
                ["get_weather", "find_attractions", *[_ROUTE_PRICE] * 3], order="exact"
            ),
            ToolArgumentsStrategy(_ROUTE_PRICE, {"origin": _HOME, "destination": "Mysore"}),
            BudgetStrategy(max_tool_calls=5, max_model_calls=7),
            ConversationJudgeStrategy(
                judge,
                criteria=["The budget the user gave is kept in every later answer."],
                structured=True,
                scale=(1, 5),
            ),
        )
    report.print()
    if output_dir is not None:
        paths = await report.save(output_dir, formats=["markdown", "json", "html"])
        print("Saved:", ", ".join(str(path) for path in paths))
    return report


async def main(output_dir: Path | None = None) -> EvaluationReport:
    """Evaluate the conversation; fail unless every row passed and none was flaky."""
    report = await evaluate(output_dir=output_dir)
    assert_that(report).has_score_greater_than(99)
    if report.flaky:
        raise AssertionError(f"flaky rows: {report.flaky}")
    return report


if __name__ == "__main__":
    anyio.run(main)
    sys.exit(0)
