"""Seed 003's travel agent, evaluated on what it answered and on what it did.

Run it from the repository root:

    python examples/travel_agent.py

The agent is a small tool-calling loop over an OpenAI-compatible chat API: it sends the
question with its tools, runs the tools the model asks for, sends their results back, and
returns the model's answer. Its tools are ``@aeval.tool`` functions, so every call lands in
the trace of the sample being evaluated; the model's requests are traced through
``aeval.trace.httpx_event_hooks()``.

Offline and deterministic: the "model" is ``aeval.testing.OpenAICompatibleServer`` on
127.0.0.1, answering from a script (:func:`travel_model`) that asks for tool calls and then
answers from the tool results; the tools are never called: ``Scorer(tools="fixtures")``
serves each sample's ``tools:`` fixtures from ``travel.yaml`` (seed 003's
``MockTravelTools``, without writing a class). The script checks the answers
(``must-contain``, ``must-not-contain``) and the traces (``expected-tools``,
``forbidden-tools``, ``expected-calls`` with their arguments, ``expected-calls: []`` for the
out-of-scope question, a budget), prints the report and each fault the fixtures injected (a
tool timeout, a tool error) with what the agent made of it, and exits with 0 when the
thresholds are met.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import httpx
import orjson

import aeval
from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.abc import Strategy
from aeval.strategies import (
    BudgetStrategy,
    ContainsStrategy,
    NotBlankStrategy,
    ToolCalledStrategy,
    ToolCallsStrategy,
    ToolPolicyStrategy,
    ToolSequenceStrategy,
)
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply
from aeval.trace import httpx_event_hooks

HERE = Path(__file__).parent
MODEL = "travel-planner"
SYSTEM = "You are a travel planning assistant for India. Travellers start in Bangalore."
MAX_STEPS = 5


# --- the tools ------------------------------------------------------------------------------


class NoLiveAPIError(RuntimeError):
    """This example has no live travel API: its tools only run with fixtures."""


def _live(service: str) -> str:
    raise NoLiveAPIError(
        f"this example has no live {service} API: evaluate it with Scorer(tools='fixtures')"
    )


@aeval.tool
async def get_weather(city: str) -> str:
    """The current weather in a city in India."""
    return _live("weather")


@aeval.tool
async def find_attractions(city: str) -> str:
    """The top tourist attractions of a city."""
    return _live("attractions")


@aeval.tool
async def get_ticket_price(origin: str, destination: str) -> str:
    """The cheapest ticket between two cities."""
    return _live("ticket price")


@aeval.tool
async def book_ticket(origin: str, destination: str) -> str:
    """Book the cheapest ticket between two cities."""
    return _live("booking")


TOOLS = {
    function.__name__: function
    for function in (get_weather, find_attractions, get_ticket_price, book_ticket)
}


def _spec(name: str, *parameters: str) -> dict[str, Any]:
    properties = {parameter: {"type": "string"} for parameter in parameters}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": TOOLS[name].__doc__,
            "parameters": {"type": "object", "properties": properties, "required": parameters},
        },
    }


TOOL_SPECS = [
    _spec("get_weather", "city"),
    _spec("find_attractions", "city"),
    _spec("get_ticket_price", "origin", "destination"),
    _spec("book_ticket", "origin", "destination"),
]


# --- the agent ------------------------------------------------------------------------------


class TravelAgent:
    """A tool-calling loop over an OpenAI-compatible chat API.

    Args:
        base_url: The API's base URL (``.../v1``).
    """

    def __init__(self, base_url: str) -> None:
        self._client = httpx.AsyncClient(
            base_url=base_url, event_hooks=httpx_event_hooks(), timeout=30
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    async def chat(self, question: str) -> str:
        """Answer ``question``, calling the tools the model asks for."""
        return await self.complete([{"role": "user", "content": question}])

    async def complete(self, history: Sequence[Mapping[str, Any]]) -> str:
        """Answer the last message of ``history`` (role/content messages, oldest first),
        calling the tools the model asks for."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            *(dict(message) for message in history),
        ]
        for _ in range(MAX_STEPS):
            body = {"model": MODEL, "messages": messages, "tools": TOOL_SPECS}
            response = await self._client.post("/chat/completions", json=body)
            response.raise_for_status()
            message = response.json()["choices"][0]["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return str(message.get("content") or "")
            for call in calls:
                content = await self._run(call["function"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        return "Sorry, I could not finish planning that."

    async def _run(self, function: Mapping[str, Any]) -> str:
        tool = TOOLS.get(function["name"])
        if tool is None:
            return f"error: no tool named {function['name']!r}"
        try:
            return str(await tool(**orjson.loads(function["arguments"])))
        except Exception as error:  # the model reads the failure, as a real agent's would
            return f"error: {type(error).__name__}: {error}"


# --- the scripted model ---------------------------------------------------------------------

_WEATHER = re.compile(r"weather in (?P<city>[A-Z]\w+)")
_ROUTE = re.compile(r"from (?P<origin>[A-Z]\w+) to (?P<destination>[A-Z]\w+)")
_TRIP = re.compile(r"(?:(?P<days>\d+)-day )?trip to (?P<city>[A-Z]\w+)")
_HOME = "Bangalore"

Call = tuple[str, dict[str, str]]


def _plan(question: str) -> list[list[Call]]:
    """The rounds of tool calls a question needs, as the model would decide them."""
    if match := _TRIP.search(question):
        city = match["city"]
        return [
            [("get_weather", {"city": city}), ("find_attractions", {"city": city})],
            [("get_ticket_price", {"origin": _HOME, "destination": city})],
        ]
    if match := _WEATHER.search(question):
        return [[("get_weather", {"city": match["city"]})]]
    if match := _ROUTE.search(question):
        route = {"origin": match["origin"], "destination": match["destination"]}
        price: list[Call] = [("get_ticket_price", route)]
        return [price, [("book_ticket", route)]] if "book" in question.lower() else [price]
    return []


def _results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each tool's result so far, by tool name."""
    names: dict[str, str] = {}
    results: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            results[names[message["tool_call_id"]]] = str(message.get("content"))
    return results


_SAID = {
    "get_weather": "Weather: {}.",
    "find_attractions": "{}.",
    "get_ticket_price": "Getting there: {}.",
    "book_ticket": "Booked: {}.",
}
_SERVICE = {
    "get_weather": "weather",
    "find_attractions": "attractions",
    "get_ticket_price": "ticket",
    "book_ticket": "booking",
}


def _answer(question: str, results: Mapping[str, str]) -> str:
    """The model's answer, made only of what the tools returned."""
    parts = []
    if match := _TRIP.search(question):
        days = match["days"] or "1"
        parts.append(f"Your {days}-day trip to {match['city']}, one or two sights a day.")
    for name, result in results.items():
        if result.startswith("error:"):
            parts.append(
                f"The {_SERVICE[name]} service did not answer ({result.removeprefix('error: ')}); "
                "please try again shortly."
            )
        else:
            parts.append(_SAID[name].format(result.rstrip(".")))
    return " ".join(parts)


def travel_model(request: RecordedRequest) -> Reply:
    """The scripted model: asks for the tools a question needs, then answers from them.

    Like OpenAI's models, it asks for one call a reply when the request says
    ``parallel_tool_calls: false``, else for each round's calls at once.
    """
    messages = request.messages
    question = next(str(m["content"]) for m in messages if m.get("role") == "user")
    plan = _plan(question)
    if not plan:
        return Reply.text(
            "I only plan travel in India: ask me about the weather, attractions or tickets."
        )
    results = _results(messages)
    one_at_a_time = (request.json or {}).get("parallel_tool_calls") is False
    for calls in plan:
        pending = [call for call in calls if call[0] not in results]
        if pending:
            return Reply.calling(*pending[:1] if one_at_a_time else pending)
    return Reply.text(_answer(question, results))


_SHARED: list[TravelAgent] = []


async def answer(question: str) -> str:
    """The agent as a plain function, the target of ``aeval run`` (``travel_agent:answer``).

    Its model is the OpenAI-compatible API at ``$TRAVEL_MODEL_URL`` when set, else the scripted
    one on a local server started with the first call (and stopped with the process).
    """
    if not _SHARED:
        url = os.environ.get("TRAVEL_MODEL_URL")
        if url is None:
            server = OpenAICompatibleServer(handler=travel_model, model=MODEL)
            server.start()
            url = server.base_url
        _SHARED.append(TravelAgent(url))
    return await _SHARED[0].chat(question)


# --- the evaluation -------------------------------------------------------------------------


def framework_checks(*, max_tokens: int | None = None) -> tuple[Strategy, ...]:
    """The checks the framework examples (``travel_openai*.py``, ``travel_pydantic_ai.py``,
    ``travel_langgraph.py``) evaluate their agents with: this agent's, but ``NotBlank``."""
    return (
        ContainsStrategy(case_sensitive=False),
        ToolCalledStrategy(),
        ToolSequenceStrategy(order="in_order"),
        ToolPolicyStrategy(),
        ToolCallsStrategy(),  # expected-calls: each call and its arguments
        BudgetStrategy(max_tool_calls=4, max_model_calls=4, max_tokens=max_tokens),
    )


def injected_faults(report: EvaluationReport) -> list[str]:
    """One line per fault a fixture injected (a tool call that raised), by sample: the tool,
    the fault, and whether the agent's answer passed every check."""
    lines = []
    seen: set[str] = set()
    for row in report.evaluations:
        if row.name in seen or row.trace is None:
            continue
        seen.add(row.name)
        passed = all(r.passed for r in report.evaluations if r.name == row.name)
        for call in row.trace.tool_calls:
            if call.error is not None:
                verdict = "handled" if passed else "NOT handled"
                lines.append(
                    f"injected fault in {row.name!r}: {call.name} raised {call.error.type} "
                    f"({call.error.message}): {verdict}"
                )
    return lines


async def main(output_dir: Path | None = None) -> EvaluationReport:
    """Evaluate the agent on ``travel.yaml`` with fixtures; save the reports if asked."""
    samples = await Samples.load(HERE / "travel.yaml")
    async with (
        OpenAICompatibleServer(handler=travel_model, model=MODEL) as server,
        TravelAgent(server.base_url) as agent,
        Scorer(concurrency=4, timeout=30, tools="fixtures") as scorer,
    ):
        report = await scorer.evaluate(
            samples,
            agent.chat,
            ContainsStrategy(case_sensitive=False),  # must-contain, must-not-contain
            NotBlankStrategy(),
            ToolCalledStrategy(),  # each of expected-tools was called
            ToolSequenceStrategy(order="in_order"),  # ... in that order
            ToolPolicyStrategy(),  # none of forbidden-tools was
            ToolCallsStrategy(),  # expected-calls: each call and its arguments
            BudgetStrategy(max_tool_calls=4, max_model_calls=4),
        )
    report.print()
    for line in injected_faults(report):
        print(line)
    if output_dir is not None:
        paths = await report.save(output_dir, formats=["markdown", "json", "html"])
        print("Saved:", ", ".join(str(path) for path in paths))
    assert_that(report).has_score_greater_than(99)
    return report


if __name__ == "__main__":
    anyio.run(main)
    sys.exit(0)
