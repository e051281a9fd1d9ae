"""Every rendering of every subject, compared byte for byte with committed golden files.

The inputs are fixed files under ``tests/data/golden/``: the example run's ``rows.jsonl``
(``examples/aeval.yaml``) with its timestamps, durations and commit fixed (``baseline.jsonl``),
a second run of it whose answers changed (``candidate.jsonl``) and a run killed after four
rows (``partial.jsonl``). From them the test renders, through public entry points:

- the report in every built-in format (``report.format``, ``report.save_as`` by extension)
  and the terminal summary (``report.print`` on a 100-column console);
- the comparison of the two runs in every format (``comparison.format``, ``save_as`` by
  extension) and as tables (``comparison.print``);
- the history of the three runs, stored in a run store the test builds (run ids fixed), in
  every format of ``aeval history`` and ``aeval runs``, tables included;
- the pytest suite report (Markdown and JSON);
- a report of conversation rows (:func:`conversation_report`: a three-turn transcript judged
  by ``EachTurn`` and a whole-conversation tool check, with a long, a markup-laden and an
  unanswered turn) in Markdown, HTML and on the terminal.

Each rendering, with the path of ``tests/data/golden`` written ``DATA``, must equal
``tests/data/golden/expected/<name>``, today, with the wall clock (``time.time``) moved a
year past every date the inputs hold, and moved before them all: a rendering shows recorded
times only (a killed run's duration is unknown, not "until now"). After a deliberate change
of a rendering, regenerate the files and review the diff::

    AEVAL_UPDATE_GOLDEN=1 python -m pytest tests/test_render_golden.py

(the test then writes the files and fails, naming them, so that a regeneration is never
mistaken for a pass).
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from _cli import Cli, cli
from rich.console import Console

import aeval
from aeval import EvaluationReport, RunStore
from aeval._pytest_plugin._suite import SuiteEntry, SuiteReport

__all__ = ["cli"]

DATA = Path(__file__).resolve().parent / "data" / "golden"
EXPECTED = DATA / "expected"
UPDATE = os.environ.get("AEVAL_UPDATE_GOLDEN", "") not in ("", "0")
WIDTH = 100
SIDES = ("baseline", "candidate", "partial")
GENERATED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DAY = 86_400.0


def report_of(name: str) -> EvaluationReport:
    rows, run = anyio.run(aeval.read_run, DATA / f"{name}.jsonl")
    return EvaluationReport(rows, run=run)


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=WIDTH, color_system=None, highlight=False), out


def renderings_of_reports(tmp: Path) -> Iterator[tuple[str, str]]:
    for side in ("baseline", "partial"):
        report = report_of(side)
        for fmt in ("markdown", "json", "junit", "html"):
            yield f"report-{side}.{fmt}", report.format(fmt)
        yield f"report-{side}-summary.md", report.format("markdown", include_details=False)
        shown, out = console()
        report.print(shown)
        yield f"report-{side}.terminal", out.getvalue()
    report = report_of("baseline")
    for extension in (".md", ".markdown", ".json", ".xml", ".html"):
        path = anyio.run(report.save_as, tmp / f"report{extension}")
        yield f"report-saved{extension}", path.read_text(encoding="utf-8")


def renderings_of_comparisons(tmp: Path) -> Iterator[tuple[str, str]]:
    # relative paths: a table padded to an absolute path's width would depend on the checkout
    with contextlib.chdir(DATA):
        comparison = aeval.compare_sync(Path("baseline.jsonl"), Path("candidate.jsonl"))
    for fmt in ("text", "markdown", "json", "html", "junit"):
        yield f"comparison.{fmt}", comparison.format(fmt, margin=1.0, non_inferiority=5.0)
    shown, out = console()
    comparison.print(shown, margin=1.0)
    yield "comparison.terminal", out.getvalue()
    for extension in (".txt", ".md", ".json", ".html", ".xml"):
        path = anyio.run(comparison.save_as, tmp / f"comparison{extension}")
        yield f"comparison-saved{extension}", path.read_text(encoding="utf-8")


async def _fill(store_path: Path, reports: dict[str, EvaluationReport]) -> None:
    async with RunStore(store_path) as store:
        await store.save(reports["baseline"], "support", labels=["nightly"], git_dirty=False)
        await store.save(reports["candidate"], "support", labels=["prompt-v2"], git_dirty=True)
        partial = reports["partial"]
        stopped = replace(partial.run, finished_at=(partial.run.started_at or 0.0) + 5.0)
        await store.save(
            EvaluationReport(partial.evaluations, run=stopped), "support", labels=["# killed"]
        )


def renderings_of_history(
    tmp: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    monkeypatch.setattr(secrets, "token_hex", lambda nbytes=None: "beef")
    store = tmp / "runs.sqlite"
    anyio.run(_fill, store, {side: report_of(side) for side in SIDES})
    columns = {"COLUMNS": str(WIDTH)}
    for fmt in ("table", "json", "markdown", "html"):
        result = run("history", "support", "--store", store, "--format", fmt, env=columns)
        assert result.returncode == 0, result.stderr
        yield f"history.{fmt}", result.stdout
    result = run("history", "support", "--store", store, "--tag", "smoke", "--format", "markdown")
    yield "history-tag.markdown", result.stdout
    for fmt in ("table", "json"):
        result = run("runs", "--store", store, "--format", fmt, env=columns)
        assert result.returncode == 0, result.stderr
        # unpadded: the table's title names the store, and is padded to its temporary path
        yield f"runs.{fmt}", unpadded(result.stdout.replace(str(store), "STORE"))


def renderings_of_suites() -> Iterator[tuple[str, str]]:
    suite = SuiteReport(
        [
            SuiteEntry.from_report("tests/test_bot.py::test_support", report_of("baseline")),
            SuiteEntry.from_report(
                "tests/test_bot.py::test_support", report_of("candidate"), label="v2 | next"
            ),
        ],
        partial="run stopped after 4 of 6 samples",
    )
    yield "suite.md", suite.render_markdown(generated=GENERATED)
    yield "suite.json", suite.render_json(generated=GENERATED)


def _conversation_rows() -> list[aeval.EvaluationRow]:
    from aeval.strategies import ContainsStrategy, EachTurn, ToolSequenceStrategy
    from aeval.trace import ToolCall, Trace, using

    weather = Trace(tool_calls=(ToolCall("get_weather", {"city": "Mysore"}, "sunny, 31C"),))
    price = Trace(
        tool_calls=(
            ToolCall(
                "get_ticket_price", {"origin": "Bangalore", "destination": "Mysore"}, "350 INR"
            ),
        )
    )
    plan = "Day 1: Mysore Palace. " + "Then walk the gardens and the market. " * 60
    transcript = aeval.Transcript(
        (
            aeval.Turn("Plan a 3-day trip to Mysore", plan, weather),
            aeval.Turn("Make it cheaper: my budget is 5000 rupees", "A <b>9000</b> | *plan*"),
            aeval.Turn("How much is the bus?", "The bus costs 350 rupees.", price),
        )
    )
    failed = aeval.Transcript((*transcript.turns[:1], aeval.Turn("And then?", None)), "error")
    turns = [
        aeval.ScriptedTurn("Plan a 3-day trip to Mysore", {"must_contain": ["Palace"]}),
        aeval.ScriptedTurn("Make it cheaper", {"must_contain": ["5000"]}),
        aeval.ScriptedTurn("How much is the bus?", {"must_contain": ["350"]}),
    ]
    samples = (
        aeval.EvaluationSample("trip", turns=turns),
        aeval.EvaluationSample("trip-cut-off", turns=turns),
    )
    each = EachTurn(ContainsStrategy())
    sequence = ToolSequenceStrategy(["get_weather", "get_ticket_price"], order="exact")

    async def judged() -> list[aeval.EvaluationRow]:
        rows = []
        for index, (sample, output) in enumerate(zip(samples, (transcript, failed), strict=True)):
            result = await each.evaluate(sample, output)
            rows.append(
                aeval.EvaluationRow.from_result(
                    sample, each.name, output, result, duration=1.5, index=index
                )
            )
            with using(output.trace):
                whole = sequence.evaluate(sample, output)
            rows.append(
                aeval.EvaluationRow.from_result(
                    sample,
                    sequence.name,
                    output,
                    whole,
                    duration=1.5,
                    index=index,
                    position=1,
                    trace=output.trace,
                )
            )
        return rows

    return anyio.run(judged)


def renderings_of_conversations() -> Iterator[tuple[str, str]]:
    run = report_of("baseline").run
    assert run is not None
    rows = _conversation_rows()
    run = replace(
        run,
        samples_expected=2,
        complete=True,
        strategies=("EachTurn(ContainsStrategy)", "ToolSequenceStrategy"),
    )
    report = EvaluationReport(rows, run=run)
    for fmt in ("markdown", "html"):
        yield f"report-conversation.{fmt}", report.format(fmt)
    shown, out = console()
    report.print(shown)
    yield "report-conversation.terminal", out.getvalue()


def unpadded(text: str) -> str:
    """``text`` without the spaces that end its lines: a terminal table pads every line to its
    widest cell, and a temporary path's length (pytest-xdist's worker folders) moves it."""
    return "\n".join(line.rstrip(" ") for line in text.split("\n"))


CLOCKS = {"today": 0.0, "a year ahead": 365 * DAY, "three years back": -3 * 365 * DAY}
"""How far the wall clock is moved for a rendering: never, past every date the inputs hold,
and before them all."""


@pytest.mark.parametrize("moved", CLOCKS.values(), ids=CLOCKS.keys())
def test_every_rendering_matches_its_golden_file(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, moved: float
) -> None:
    """Whatever the date: a rendering shows recorded times only, never the clock's."""
    if moved:
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + moved)
    rendered = {
        name: text.replace(str(DATA), "DATA")
        for name, text in [
            *renderings_of_reports(tmp_path / "reports"),
            *renderings_of_comparisons(tmp_path / "comparisons"),
            *renderings_of_history(tmp_path, cli, monkeypatch),
            *renderings_of_suites(),
            *renderings_of_conversations(),
        ]
    }
    if UPDATE:
        EXPECTED.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (EXPECTED / name).write_bytes(text.encode("utf-8"))
        pytest.fail(f"wrote {len(rendered)} golden files into {EXPECTED}: review the diff")
    committed = sorted(path.name for path in EXPECTED.iterdir())
    assert committed == sorted(rendered), "a golden file is missing or left over"
    different = [
        name
        for name, text in rendered.items()
        if unpadded((EXPECTED / name).read_text(encoding="utf-8")) != unpadded(text)
    ]
    assert different == [], (
        f"renderings differ from {EXPECTED}: {', '.join(different)} "
        "(AEVAL_UPDATE_GOLDEN=1 regenerates them)"
    )
