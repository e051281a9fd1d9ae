"""A conversation row in the HTML report, in headless Chromium: the script builds the same
turns, marks and traces as the static rows, and hostile messages run nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from test_formatter_html import HOSTILE, body_rows, detail_nodes, parse
from test_formatter_html_browser import browser, needs_chromium, page, write

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    ScriptedTurn,
    Transcript,
    Turn,
)
from aeval.strategies import ContainsStrategy, EachTurnStrategy
from aeval.trace import ToolCall, Trace

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["browser", "page"]

pytestmark = needs_chromium

ATTACK = f"<img src=x onerror=alert(1)>{HOSTILE}"


def conversation_report() -> EvaluationReport:
    trace = Trace(tool_calls=(ToolCall("get_weather", {"city": ATTACK}, ATTACK, mocked=True),))
    transcript = Transcript(
        (
            Turn(f"Plan a trip {ATTACK}", f"Palace {ATTACK}", trace),
            Turn("Budget?", f"no idea {ATTACK}"),
            Turn("Bus?", None),
        ),
        ended="error",
    )
    sample = EvaluationSample(
        "trip",
        turns=[
            ScriptedTurn("Plan a trip", {"must_contain": ["Palace"]}),
            ScriptedTurn("Budget?", {"must_contain": ["5000"]}),
            "Bus?",
        ],
    )
    strategy = EachTurnStrategy(ContainsStrategy(must_contain=["a"]))
    result = anyio.run(strategy.evaluate, sample, transcript)
    assert isinstance(result, EvaluationResult)
    row = EvaluationRow.from_result(sample, strategy.name, transcript, result, trace=trace)
    return EvaluationReport([row])


# built at import: Playwright's sync API runs an event loop in the test's thread
REPORT = conversation_report()


def test_the_script_builds_the_turns_the_static_rows_show(page: Page, tmp_path: Path) -> None:
    report = REPORT
    page.goto(write(report, tmp_path))
    built = page.evaluate(
        """() => {
          const dt = [...document.querySelectorAll("#rows tbody tr dl > dt")]
            .find((node) => node.textContent === "Conversation");
          return dt ? dt.nextElementSibling.textContent : null;
        }"""
    )
    static = detail_nodes(body_rows(parse(report.format("html")))[0])["Conversation"].text()
    assert built == static
    assert static.startswith("3 turns; ended: a turn raised; turn 3 is the first")
    assert "Turn 3 · failed first failing turn" in static
    badges = page.evaluate(
        """() => [...document.querySelectorAll("#rows tbody tr .turns .badge.failed")]
          .map((node) => node.textContent)"""
    )
    assert badges == ["first failing turn"]
    assert page.evaluate("document.querySelectorAll('img, script').length") == 1
