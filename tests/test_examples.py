"""The examples are part of the documentation: they must run, offline."""

from __future__ import annotations

import importlib.metadata
import json
import os
import runpy
import sys
from pathlib import Path

import anyio
import pytest
from _cli import main

from aeval import EvaluationReport, read_run

EXAMPLES = Path(__file__).parent.parent / "examples"


def _rows(report: EvaluationReport) -> list[tuple[str, str | None, str, object]]:
    return [(r.name, r.strategy, r.outcome.value, r.output) for r in report.evaluations]


async def _cli_report(tmp_path: Path) -> EvaluationReport:
    argv = ["run", str(EXAMPLES / "aeval.yaml"), "--quiet", "--output", str(tmp_path)]
    argv += ["--store", str(tmp_path / "runs.sqlite")]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    return EvaluationReport((await read_run(tmp_path / "rows.jsonl"))[0])


@pytest.mark.anyio
async def test_quickstart_is_the_cli_run_in_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="quickstart")
    report = await module["main"](tmp_path / "reports")
    out = capsys.readouterr().out
    assert report.score == pytest.approx(100 * 11 / 12)
    assert "91.67%" in out and "Warranty" in out
    data = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert data["globalScore"] == 91.67
    assert (tmp_path / "reports" / "report.md").read_text().startswith("# Evaluation Report")
    assert (tmp_path / "reports" / "report.xml").exists()
    assert _rows(report) == _rows(await _cli_report(tmp_path / "cli"))
    sys.modules.pop("support_bot", None)


def shadowable_names() -> set[str]:
    """The top-level modules a program may import: the standard library's, aeval and those
    of every installed distribution (the development install has every extra's)."""
    installed = importlib.metadata.packages_distributions()
    return {*sys.stdlib_module_names, *sys.builtin_module_names, *installed, "aeval"}


def test_no_example_shadows_a_module() -> None:
    # `python examples/X.py` puts examples/ first on sys.path, and pytest puts a test's folder
    # there: a folder or module of that name would be imported in place of the real one (a
    # folder only where the real one is not installed, so a development install hides it).
    taken = shadowable_names()
    shadows = sorted(
        path.relative_to(EXAMPLES.parent).as_posix()
        for path in EXAMPLES.rglob("*")
        if "__pycache__" not in path.parts
        and (path.is_dir() or path.suffix == ".py")
        and (path.name if path.is_dir() else path.stem) in taken
    )
    assert shadows == [], f"rename these: each has the name of a module Python imports: {shadows}"


def readme_snippet() -> str:
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    return readme.split("## In one screen\n\n```python\n", 1)[1].split("```", 1)[0]


def report_rows(path: Path) -> list[tuple[object, ...]]:
    rows = json.loads(path.read_text(encoding="utf-8"))["evaluations"]
    return [(r["name"], r["strategy"], r["outcome"], r.get("actualOutput")) for r in rows]


@pytest.mark.anyio
async def test_the_readme_snippet_runs_as_written_from_the_project_root(tmp_path: Path) -> None:
    # A project root of its own (this checkout's aeval and examples), so that the snippet's
    # reports land in tmp_path; saved as a file there and run with a plain `python`, as a user
    # would, with nothing added to the path.
    project = tmp_path / "project"
    project.mkdir()
    for name in ("aeval", "examples"):
        (project / name).symlink_to(EXAMPLES.parent / name, target_is_directory=True)
    (project / "one_screen.py").write_text(readme_snippet(), encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "COLUMNS"}}
    done = await anyio.run_process(
        [sys.executable, "one_screen.py"], cwd=project, env=environment, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert "Evaluation summary" in done.stdout.decode()
    reports = project / "target" / "evaluation-reports"
    assert sorted(p.name for p in reports.iterdir()) == ["report.json", "report.md", "report.xml"]
    await _cli_report(tmp_path / "cli")
    cli_rows = report_rows(tmp_path / "cli" / "report.json")
    assert len(cli_rows) == 12
    assert report_rows(reports / "report.json") == cli_rows


@pytest.mark.anyio
async def test_the_travel_agent_is_evaluated_on_its_answers_and_its_tool_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = runpy.run_path(str(EXAMPLES / "travel_agent.py"), run_name="travel_agent")
    report = await module["main"](tmp_path)
    out = capsys.readouterr().out
    assert "Evaluation summary" in out
    assert report.score == 100.0
    assert len(report.evaluations) == 7 * 7
    # the out-of-scope question: expected-calls: [] checks that no tool was called
    scope = [r for r in report.evaluations if r.name == "Capital of France"]
    assert {r.strategy: r.outcome.value for r in scope}["ToolCallsStrategy"] == "passed"
    assert report.not_applicable_count == 0
    # each fault a fixture injected, by name
    assert "injected fault in 'Weather service down': get_weather raised ToolTimeoutError" in out
    assert "injected fault in 'Ticket service down': get_ticket_price raised ToolError" in out
    assert out.count("injected fault in") == 2
    traces = {row.name: row.trace for row in report.evaluations}
    assert all(trace is not None for trace in traces.values())
    trip = traces["Two days in Mysore"]
    assert trip is not None
    assert trip.tool_names() == ("get_weather", "find_attractions", "get_ticket_price")
    assert all(call.mocked for call in trip.tool_calls)
    assert [call.requested_tools for call in trip.model_calls] == [
        ("get_weather", "find_attractions"),
        ("get_ticket_price",),
        (),
    ]
    down = traces["Weather service down"]
    assert down is not None
    (timeout,) = down.tool_calls
    assert timeout.error is not None and timeout.error.type == "ToolTimeoutError"
    off_topic = traces["Capital of France"]
    assert off_topic is not None and off_topic.tool_calls == ()
    answers = {row.name: row.output for row in report.evaluations}
    assert answers["Book the bus"] == (
        "Getting there: Cheapest: KSRTC bus ₹180, journey 3 hours. "
        "Booked: ticket KSRTC-1042, bus leaves 07:30."
    )
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "book_ticket" in markdown and "KSRTC-1042" in markdown


@pytest.mark.anyio
async def test_the_travel_agent_runs_as_a_script_and_fails_a_wrong_agent(tmp_path: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    script = str(EXAMPLES / "travel_agent.py")
    done = await anyio.run_process([sys.executable, script], env=environment, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert "ToolPolicyStrategy" in done.stdout.decode()
    # an agent that also books, where the samples give no booking fixture: never a live call,
    # an UnmockedToolCall error row naming the tool, and the run fails
    broken = tmp_path / "broken.py"
    broken.write_text(
        "import runpy, sys\n"
        f"module = runpy.run_path({script!r}, run_name='travel_agent')\n"
        "plan = module['_plan']\n"
        "def booking_plan(question):\n"
        "    rounds = plan(question)\n"
        "    route = {'origin': 'Bangalore', 'destination': 'Mysore'}\n"
        "    return rounds + [[('book_ticket', route)]] if rounds else rounds\n"
        "module['main'].__globals__['_plan'] = booking_plan\n"
        "import anyio\n"
        "anyio.run(module['main'])\n",
        encoding="utf-8",
    )
    done = await anyio.run_process([sys.executable, str(broken)], env=environment, check=False)
    assert done.returncode == 1
    said = done.stdout.decode() + done.stderr.decode()
    assert "UnmockedToolCall" in said and "no fixtures for 'book_ticket'" in said


@pytest.mark.anyio
async def test_the_rag_assistant_shows_each_claims_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = runpy.run_path(str(EXAMPLES / "rag_assistant.py"), run_name="rag_assistant")
    report = await module["main"](tmp_path)
    assert "Evaluation summary" in capsys.readouterr().out
    failed = [(r.name, r.strategy) for r in report.evaluations if r.outcome.value == "failed"]
    assert failed == [("Refund window", "FaithfulnessStrategy")]
    refund = next(r for r in report.evaluations if r.name == "Refund window")
    assert refund.metadata["claims"] == [
        {"claim": "Refunds are accepted within 30 days of delivery.", "verdict": "supported"},
        {"claim": "Refunds are paid as a gift card.", "verdict": "not_found"},
    ]
    assert refund.trace is not None
    (retrieval,) = refund.trace.retrievals
    assert [document.id for document in retrieval.documents] == ["refunds"]
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    claims = "#### Claims\n- supported: Refunds are accepted within 30 days of delivery.\n"
    assert claims + "- not found: Refunds are paid as a gift card.\n" in markdown


@pytest.mark.anyio
async def test_the_rag_assistant_with_a_garbage_judge_counts_unscored_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = runpy.run_path(str(EXAMPLES / "rag_assistant.py"), run_name="rag_assistant")
    report = await module["main"](garbage_judge_replies=True)
    assert report.unscored_count == 8
    assert all(row.score is None for row in report.evaluations)
    assert "Unscored rows (the judge's replies could not be read): 8" in capsys.readouterr().out


@pytest.mark.anyio
async def test_the_rag_assistant_runs_as_a_script() -> None:
    environment = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    script = str(EXAMPLES / "rag_assistant.py")
    done = await anyio.run_process([sys.executable, script], env=environment, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert "FaithfulnessStrategy" in done.stdout.decode()
    garbage = [sys.executable, script, "--garbage-judge"]
    done = await anyio.run_process(garbage, env=environment, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert "Unscored rows (the judge's replies could not be read): 8" in done.stdout.decode()
