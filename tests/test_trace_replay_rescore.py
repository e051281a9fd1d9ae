"""Replaying a stored run's tool results (rows.jsonl, report.json, the run store) and
rescoring a stored run's outputs and traces without calling the function under test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aeval
from aeval import (
    ComparisonError,
    EvaluationReport,
    EvaluationResult,
    EvaluationSample,
    JsonlSink,
    Outcome,
    RunStore,
    Scorer,
)
from aeval.strategies import ToolCalledStrategy, ToolPolicyStrategy
from aeval.trace import Replay, current

pytestmark = pytest.mark.anyio

CALLS: list[str] = []


@aeval.tool
def get_weather(city: str, unit: str = "C") -> str:
    CALLS.append(f"get_weather {city} {unit}")
    return f"live weather of {city} in {unit}"


@aeval.tool
async def book_ticket(attraction: str) -> dict[str, Any]:
    CALLS.append(f"book_ticket {attraction}")
    return {"id": len(CALLS)}


@pytest.fixture(autouse=True)
def clear_calls() -> Any:
    CALLS.clear()
    yield


async def agent(city: str, unit: str = "C") -> str:
    weather = get_weather(city, unit)
    if city == "Broken":
        raise RuntimeError("the agent fell over after one call")
    ticket = await book_ticket("Palace")
    return f"{weather}; ticket {ticket['id']}"


SAMPLES = [EvaluationSample("mysore", ["Mysore"]), EvaluationSample("ooty", ["Ooty"])]


def says_weather(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean("weather" in str(output), "mentions the weather")


async def recorded_files(tmp_path: Path) -> tuple[EvaluationReport, Path, Path]:
    rows = tmp_path / "rows.jsonl"
    report = await Scorer(sinks=[JsonlSink(rows)]).evaluate(SAMPLES, agent, says_weather)
    return report, rows, await report.save_as(tmp_path / "report.json")


# --- replay ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rows.jsonl", "report.json", "store"])
async def test_replay_loads_a_stored_run_and_serves_it_without_live_calls(
    tmp_path: Path, kind: str
) -> None:
    recorded, rows, report_json = await recorded_files(tmp_path)
    store_path = tmp_path / "runs.sqlite"
    async with RunStore(store_path) as store:
        await store.save(recorded, "travel")
    ref = {"rows.jsonl": str(rows), "report.json": str(report_json), "store": "travel@latest"}
    CALLS.clear()
    replay = Replay(ref[kind], store=store_path if kind == "store" else None)
    report = await Scorer(tools=replay).evaluate(SAMPLES, agent, says_weather)
    assert CALLS == []
    assert [row.output for row in report.evaluations] == [
        row.output for row in recorded.evaluations
    ]
    assert all(
        row.trace is not None and row.trace.tool_calls[0].mocked for row in report.evaluations
    )
    assert report.run.tools == f"replay:{ref[kind]}"


async def test_a_changed_argument_gives_exactly_one_unmocked_call_naming_the_difference(
    tmp_path: Path,
) -> None:
    _, rows, _ = await recorded_files(tmp_path)
    CALLS.clear()
    changed = [EvaluationSample("mysore", ["Mysore", "F"]), EvaluationSample("ooty", ["Ooty"])]
    report = await Scorer(tools=Replay(rows)).evaluate(changed, agent, says_weather)
    assert CALLS == []
    errors = [row for row in report.evaluations if row.error is not None]
    assert len(errors) == 1
    error = errors[0].error
    assert error is not None and error.type == "UnmockedToolCall"
    assert "get_weather(city='Mysore', unit='F')" in error.message
    assert "'unit' differs: recorded 'C', now 'F'" in error.message
    assert report.evaluations[1].passed


async def test_replay_names_a_missing_file_or_run(tmp_path: Path) -> None:
    with pytest.raises(ComparisonError, match=r"replay source file .*nope/rows.jsonl does not"):
        await Replay(str(tmp_path / "nope" / "rows.jsonl")).load()
    with pytest.raises(ComparisonError, match="no run store at"):
        await Replay("latest", store=tmp_path / "none.sqlite").load()


# --- rescore ---------------------------------------------------------------------------------


def never(params: Any) -> Any:
    raise AssertionError("the function under test must not be called")


@pytest.mark.parametrize("kind", ["report", "rows.jsonl", "report.json", "store"])
async def test_rescore_applies_new_strategies_to_stored_outputs_and_traces(
    tmp_path: Path, kind: str
) -> None:
    samples = [*SAMPLES, EvaluationSample("broken", ["Broken"])]
    rows = tmp_path / "rows.jsonl"
    recorded = await Scorer(sinks=[JsonlSink(rows)], repeats=2).evaluate(
        samples, agent, says_weather
    )
    report_json = await recorded.save_as(tmp_path / "report.json")
    store_path = tmp_path / "runs.sqlite"
    async with RunStore(store_path) as store:
        run_id = await store.save(recorded, "travel")
    sources: dict[str, Any] = {
        "report": recorded,
        "rows.jsonl": rows,
        "report.json": str(report_json),
        "store": run_id,
    }
    CALLS.clear()
    seen: list[list[str]] = []

    def sees_trace(sample: EvaluationSample, output: object) -> EvaluationResult:
        trace = current()
        seen.append([] if trace is None else list(trace.tool_names()))
        return EvaluationResult.from_boolean(True)

    async with Scorer() as scorer:
        report = await scorer.rescore(
            sources[kind],
            says_weather,
            ToolCalledStrategy("book_ticket"),
            ToolPolicyStrategy(deny=["get_weather"]),
            sees_trace,
            store=store_path,
        )
    assert CALLS == []
    rows_of = {(row.name, row.repeat, row.position): row for row in report.evaluations}
    for old in recorded.evaluations:
        new = rows_of[(old.name, old.repeat, 0)]
        assert (new.outcome, new.score, new.explanation, new.output, new.duration) == (
            old.outcome,
            old.score,
            old.explanation,
            old.output,
            old.duration,
        )
        assert new.trace == old.trace
    assert rows_of[("mysore", 1, 1)].passed
    assert not rows_of[("mysore", 0, 2)].passed
    broken = [row for row in report.evaluations if row.name == "broken"]
    assert len(broken) == 8 and all(row.function_failed for row in broken)
    assert all(row.error is not None and row.error.type == "RuntimeError" for row in broken)
    assert broken[0].trace is not None and broken[0].trace.tool_names() == ("get_weather",)
    assert sorted(seen) == [["get_weather", "book_ticket"]] * 4
    assert report.sample_count == 3
    assert report.run.repeats == 2


async def test_rescore_with_the_same_strategy_gives_the_same_rows() -> None:
    recorded = await Scorer(concurrency=2).evaluate(
        SAMPLES, agent, says_weather, ToolCalledStrategy("get_weather", min_calls=0, max_calls=0)
    )
    CALLS.clear()
    report = await Scorer(concurrency=2).rescore(
        recorded, says_weather, ToolCalledStrategy("get_weather", min_calls=0, max_calls=0)
    )
    assert CALLS == []

    def verdicts(source: EvaluationReport) -> list[tuple[Any, ...]]:
        return [
            (row.name, row.strategy, row.outcome, row.score, row.explanation, row.output)
            for row in source.evaluations
        ]

    assert verdicts(report) == verdicts(recorded)
    assert report.evaluations[1].outcome is Outcome.FAILED


@pytest.mark.parametrize("expected", [5, None])
async def test_rescoring_a_partial_run_gives_a_partial_report(
    tmp_path: Path, expected: int | None
) -> None:
    recorded = await Scorer().evaluate(SAMPLES, agent, says_weather)
    stopped = recorded.with_run(recorded.run.replace(complete=False, samples_expected=expected))
    saved = await stopped.save_as(tmp_path / "report.json")
    for source in (stopped, str(saved)):
        report = await Scorer().rescore(source, says_weather)
        assert len(report.evaluations) == len(SAMPLES)
        assert report.complete is False and report.run.complete is False
        (warning,) = report.run.warnings
        assert warning.startswith(f"the rescored run is partial (run stopped after {len(SAMPLES)}")


async def test_rescore_refuses_a_run_without_its_rows_or_without_strategies() -> None:
    kept = await Scorer(keep="failures").evaluate(SAMPLES, agent, says_weather)
    with pytest.raises(ValueError, match="holds only some of its rows"):
        await Scorer().rescore(kept, says_weather)
    with pytest.raises(TypeError, match="at least one strategy"):
        await Scorer().rescore(kept)
    with pytest.raises(ValueError, match="holds no rows"):
        await Scorer().rescore(EvaluationReport([]), says_weather)


# --- compare ---------------------------------------------------------------------------------


async def test_compare_aligns_an_agent_strategy_like_any_other(tmp_path: Path) -> None:
    async def candidate(city: str) -> str:
        if city.endswith(("1", "2", "3", "4", "5", "6", "7", "8")):
            return f"guessed the weather of {city}"
        return await agent(city)

    cities = [EvaluationSample(f"c{i}", [f"City{i}"]) for i in range(30)]
    strategies = (says_weather, ToolCalledStrategy("get_weather"))
    paths = []
    for name, target in (("baseline", agent), ("candidate", candidate)):
        rows = tmp_path / f"{name}.jsonl"
        await Scorer(concurrency=4, sinks=[JsonlSink(rows)]).evaluate(cities, target, *strategies)
        paths.append(rows)
    comparison = await aeval.compare(*paths)
    assert comparison.strategies == ("says_weather", "ToolCalledStrategy")
    tools = comparison.for_strategy("ToolCalledStrategy")
    assert len(tools.regressions) == 24 and not tools.fixes
    assert {pair.key.sample for pair in tools.regressions} == {
        f"c{i}" for i in range(30) if str(i)[-1] in "12345678"
    }
    assert tools.test == "exact McNemar test" and tools.verdict == "worse"
    assert comparison.for_strategy("says_weather").verdict == "no significant difference"
    assert not comparison.for_strategy("says_weather").regressions


async def test_a_run_recorded_once_replays_into_every_repeat(tmp_path: Path) -> None:
    _, rows, _ = await recorded_files(tmp_path)
    CALLS.clear()
    report = await Scorer(repeats=3, tools=Replay(rows)).evaluate(SAMPLES, agent, says_weather)
    assert CALLS == []
    assert [row.repeat for row in report.evaluations] == [0, 1, 2, 0, 1, 2]
    assert all(row.passed for row in report.evaluations)
