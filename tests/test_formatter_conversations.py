"""Conversation rows in the reports: Markdown and HTML show the transcript turn by turn,
escaped and cut with their lengths, each turn's trace, the first failing turn marked; the
terminal's failures name the turn."""

from __future__ import annotations

import io
from typing import Any

import anyio
import pytest
from rich.console import Console
from test_formatter_html import body_rows, csp_source, detail_nodes, parse, row_data, scripts

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    ScriptedTurn,
    Transcript,
    Turn,
)
from aeval.strategies import ContainsStrategy, EachTurn
from aeval.trace import ToolCall, Trace

LONG = "x" * 2500
TRANSCRIPT = Transcript(
    (
        Turn("Plan a trip", f"Palace. {LONG}", Trace(tool_calls=(ToolCall("get_weather", {}),))),
        Turn("Budget <5000> | *cheap*", "A <script>alert(1)</script> plan costing 9000"),
        Turn("Bus price?", "350 rupees"),
    )
)
SAMPLE = EvaluationSample(
    "trip",
    turns=[
        ScriptedTurn("Plan a trip", {"must_contain": ["Palace"]}),
        ScriptedTurn("Budget", {"must_contain": ["5000"]}),
        ScriptedTurn("Bus price?", {"must_contain": ["350"]}),
    ],
)


def judged_row(**changes: Any) -> EvaluationRow:
    strategy = EachTurn(ContainsStrategy())
    result = anyio.run(strategy.evaluate, SAMPLE, TRANSCRIPT)
    assert isinstance(result, EvaluationResult)
    return EvaluationRow.from_result(SAMPLE, strategy.name, TRANSCRIPT, result, **changes)


def test_markdown_shows_each_turn_escaped_cut_and_the_failing_turn_marked() -> None:
    text = EvaluationReport([judged_row(trace=TRANSCRIPT.trace)]).format("markdown")
    conversation = text[text.index("#### Conversation") :]
    assert "#### Result" not in text
    assert conversation.startswith(
        "#### Conversation\n3 turns; ended: its script ran out; turn 2 is the first that did "
        "not pass\n"
    )
    assert "##### Turn 1 · passed\n**User**\n```\nPlan a trip\n```" in conversation
    assert "##### ❌ Turn 2 · failed · first failing turn\n" in conversation
    assert "##### Turn 3 · passed" in conversation
    assert f"… ({len('Palace. ') + len(LONG)} characters in all)" in conversation
    assert "Trace: 1 tool call" in conversation
    assert "1. tool get\\_weather() -&gt; null" in conversation
    # the turns show their traces, so the row's combined trace is not shown again
    assert "#### Trace" not in text


def test_html_static_rows_show_turns_escaped_and_the_failing_turn_badged() -> None:
    page = EvaluationReport([judged_row()]).format("html")
    assert "<script>alert(1)" not in page
    root = parse(page)
    [tr] = body_rows(root)
    shown = detail_nodes(tr)
    assert "Output" not in shown
    conversation = shown["Conversation"]
    turns = conversation.find("ol").children
    assert len(turns) == 3
    texts = [turn.text() for turn in turns if not isinstance(turn, str)]
    assert texts[1].startswith("Turn 2 · failed first failing turn")
    assert "A <script>alert(1)</script> plan costing 9000" in texts[1]
    assert "Budget <5000> | *cheap*" in texts[1]
    badges = [n for n in conversation.find_all("span") if n.attrs.get("class") == "badge failed"]
    assert len(badges) == 1
    assert "characters in all)" in texts[0]
    assert "get_weather" in texts[0]


def test_html_script_builds_turns_only_on_pages_with_conversations() -> None:
    root = parse(EvaluationReport([judged_row()]).format("html"))
    code, _ = scripts(root)
    assert "row.C" in code.text()
    [policy] = [m for m in root.find_all("meta") if m.attrs.get("http-equiv")]
    assert csp_source(code.text()) in policy.attr("content")
    [record] = row_data(root)
    assert record["Cs"].startswith("3 turns;")
    titles = [(turn[0], turn[1]) for turn in record["C"]]
    assert titles == [("Turn 1 · passed", 0), ("Turn 2 · failed", 1), ("Turn 3 · passed", 0)]
    assert record["C"][0][4] == "1 tool call"
    assert "T" not in record
    plain = EvaluationRow.from_result(
        EvaluationSample("q", ["hi"]), "S", "hello", EvaluationResult.passing()
    )
    other, _ = scripts(parse(EvaluationReport([plain]).format("html")))
    assert len(other.text()) < len(code.text())
    assert "row.C" not in other.text()


@pytest.mark.parametrize("details", [True, False])
def test_html_without_details_has_no_transcript(details: bool) -> None:
    page = EvaluationReport([judged_row()]).format("html", include_details=details)
    assert ("row.C" in page) is details
    assert ("Plan a trip" in page) is details


def test_terminal_failures_name_the_failing_turn() -> None:
    out = io.StringIO()
    EvaluationReport([judged_row()]).print(
        Console(file=out, width=200, color_system=None, highlight=False)
    )
    assert "turn 2 of 3 ('Budget <5000> | *cheap*') did not pass ContainsStrategy" in (
        out.getvalue()
    )


def test_a_row_read_back_from_rows_jsonl_renders_the_same() -> None:
    import orjson

    row = judged_row(trace=TRANSCRIPT.trace)
    back = EvaluationRow.from_dict(orjson.loads(orjson.dumps(row.to_dict())))
    assert isinstance(back.output, Transcript)
    assert back.metadata["failed_turn"] == 2
    before, after = EvaluationReport([row]), EvaluationReport([back])
    for fmt in ("markdown", "html"):
        assert after.format(fmt) == before.format(fmt)
