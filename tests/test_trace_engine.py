"""Traces through the Scorer: each (sample, repeat) is traced into its rows, under concurrency,
in threads and in the target's own task groups; errors keep the calls made before them;
mock tools (fixtures, replay); strategies see the trace; rows.jsonl and report.json keep it."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson
import pytest

import aeval
from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    Outcome,
    RunStore,
    SampleLoadError,
    Samples,
    Scorer,
    Shard,
    merge_reports,
    read_run,
)
from aeval.formatters.json import report_from_json
from aeval.strategies import ToolCalledStrategy
from aeval.trace import (
    CallError,
    Replay,
    ToolCall,
    Trace,
    TraceLimits,
    current,
    record_retrieval,
    record_tool_call,
)

pytestmark = pytest.mark.anyio

LIVE: list[tuple[str, Any]] = []


@aeval.tool
async def lookup(sample: int, step: int) -> str:
    await anyio.lowlevel.checkpoint()
    return f"{sample}.{step}"


@aeval.tool
def lookup_sync(sample: int, step: int) -> str:
    return f"{sample}.{step}"


@aeval.tool
def get_weather(city: str) -> str:
    LIVE.append(("get_weather", city))
    return f"live weather of {city}"


@aeval.tool
async def book_ticket(attraction: str) -> dict[str, Any]:
    LIVE.append(("book_ticket", attraction))
    return {"id": 1, "live": True}


@pytest.fixture(autouse=True)
def clear_live() -> Any:
    LIVE.clear()
    yield


def number(sample: EvaluationSample) -> int:
    return int(sample.name.removeprefix("s"))


def samples(count: int) -> list[EvaluationSample]:
    return [EvaluationSample(f"s{i}", [i]) for i in range(count)]


def passes(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(True)


def steps_of(trace: Trace | None) -> list[tuple[int, int]]:
    assert trace is not None
    return [(call.arguments["sample"], call.arguments["step"]) for call in trace.tool_calls]


# --- isolation ---------------------------------------------------------------------------


async def test_concurrent_samples_each_get_exactly_their_own_calls() -> None:
    count, concurrency = 200, 50
    steps = {i: 1 + i % 5 for i in range(count)}
    first_calls = 0
    all_in_flight = anyio.Event()

    async def target(i: int) -> str:
        nonlocal first_calls
        await lookup(i, 0)
        first_calls += 1
        if first_calls == concurrency:
            all_in_flight.set()
        if i < concurrency:
            await all_in_flight.wait()  # the first 50 samples' calls interleave
        for step in range(1, steps[i]):
            if step % 2:
                record_retrieval([f"doc {i}"], query=f"{i}.{step}")
            await lookup(i, step)
        return "done"

    seen: list[tuple[str, int]] = []

    def sees_its_trace(sample: EvaluationSample, output: object) -> EvaluationResult:
        trace = current()
        assert trace is not None
        seen.append((sample.name, len(trace.tool_calls)))
        return EvaluationResult.from_boolean(True)

    report = await Scorer(concurrency=concurrency).evaluate(samples(count), target, sees_its_trace)
    assert all_in_flight.is_set()
    assert len(report.evaluations) == count
    for row in report.evaluations:
        i = number(row.sample)
        assert steps_of(row.trace) == [(i, step) for step in range(steps[i])]
        assert row.trace is not None
        assert [r.query for r in row.trace.retrievals] == [
            f"{i}.{step}" for step in range(1, steps[i], 2)
        ]
    assert sorted(seen) == sorted((f"s{i}", steps[i]) for i in range(count))


async def test_sync_targets_in_worker_threads_record_into_their_own_sample() -> None:
    count = 40
    barrier = threading.Barrier(8, timeout=30)

    def target(i: int) -> str:
        lookup_sync(i, 0)
        if i < 8:
            barrier.wait()  # eight threads are recording at once
        lookup_sync(i, 1)
        return "done"

    report = await Scorer(concurrency=8).evaluate(samples(count), target, passes)
    assert [steps_of(row.trace) for row in report.evaluations] == [
        [(i, 0), (i, 1)] for i in range(count)
    ]


async def test_a_target_that_starts_its_own_tasks_and_threads_records_them_all() -> None:
    async def target(i: int) -> str:
        async with anyio.create_task_group() as group:
            for step in range(3):
                group.start_soon(lookup, i, step)
        await anyio.to_thread.run_sync(lookup_sync, i, 3)
        return "done"

    report = await Scorer(concurrency=10).evaluate(samples(30), target, passes)
    for row in report.evaluations:
        i = number(row.sample)
        assert sorted(steps_of(row.trace)) == [(i, step) for step in range(4)]


async def test_repeats_are_traced_apart() -> None:
    calls = 0

    async def target(i: int) -> str:
        nonlocal calls
        calls += 1
        await lookup(i, calls)
        return "done"

    report = await Scorer(repeats=3).evaluate(samples(2), target, passes)
    assert [len(steps_of(row.trace)) for row in report.evaluations] == [1] * 6
    assert len({steps_of(row.trace)[0] for row in report.evaluations}) == 6


async def test_a_sample_that_records_nothing_has_no_trace() -> None:
    report = await Scorer().evaluate(samples(2), lambda i: "done", passes)
    assert [row.trace for row in report.evaluations] == [None, None]


async def _sees(sample: EvaluationSample, output: object) -> EvaluationResult:
    """An async strategy (so the run takes the general path, not the direct worker)."""
    seen = current()
    return EvaluationResult.from_boolean(seen is not None and seen.tool_calls == ())


@pytest.mark.parametrize("path", ["direct", "general"])
async def test_an_agent_that_calls_no_tool_has_an_empty_trace_for_its_checks(path: str) -> None:
    from aeval.strategies import BudgetStrategy, ToolPolicyStrategy

    no_tool = [
        EvaluationSample("chat", ["hi"], metadata={"expected_tools": []}),
        EvaluationSample("out of scope", ["what is 2+2?"], metadata={"expected_tools": []}),
    ]
    checks: list[Any] = [
        ToolCalledStrategy(min_calls=0, max_calls=0),
        ToolCalledStrategy("book", min_calls=0, max_calls=0),
        ToolPolicyStrategy(deny=["book"]),
        BudgetStrategy(max_tool_calls=0),
    ]
    if path == "general":
        checks.append(_sees)
    report = await Scorer(concurrency=2).evaluate(no_tool, lambda q: "no tool needed", *checks)
    failed = [(row.name, row.strategy, row.explanation) for row in report.evaluations]
    assert [row.passed for row in report.evaluations] == [True] * len(failed), failed


async def test_a_conversation_that_calls_no_tool_has_an_empty_trace_for_its_checks() -> None:
    from aeval.strategies import ToolPolicyStrategy

    sample = EvaluationSample("chat", turns=["hello", "thanks"])

    async def reply(conversation: aeval.Conversation) -> str:
        return "hi"

    report = await Scorer().evaluate([sample], reply, ToolPolicyStrategy(deny=["book"]), _sees)
    assert [row.passed for row in report.evaluations] == [True, True], report.evaluations


async def test_rescoring_a_sample_that_called_no_tool_sees_an_empty_trace() -> None:
    from aeval.strategies import ToolPolicyStrategy

    ran = await Scorer().evaluate(samples(2), lambda i: "done", passes)
    report = await Scorer().rescore(ran, ToolPolicyStrategy(deny=["book"]), _sees)
    assert [row.passed for row in report.evaluations] == [True] * 4, report.evaluations


# --- errors ------------------------------------------------------------------------------


async def test_an_error_after_two_calls_keeps_both_calls_on_every_error_row() -> None:
    async def target(i: int) -> str:
        await lookup(i, 0)
        with pytest.raises(ValueError):
            record_tool_call("fails", {"i": i}, error=ValueError("no"))
            raise ValueError("no")
        await lookup(i, 1)
        raise RuntimeError("the agent gave up")

    report = await Scorer().evaluate(samples(1), target, passes, ToolCalledStrategy("lookup"))
    assert len(report.evaluations) == 2
    for row in report.evaluations:
        assert row.outcome is Outcome.ERROR
        assert row.error is not None and row.error.type == "RuntimeError"
        assert row.trace is not None
        assert row.trace.tool_names() == ("lookup", "fails", "lookup")
        assert row.trace.tool_calls[1].error == CallError("ValueError", "no")

    report = await Scorer().evaluate(samples(1), target)
    (row,) = report.evaluations
    assert row.strategy is None
    assert row.trace is not None and len(row.trace.tool_calls) == 3


async def test_a_timed_out_sample_keeps_the_calls_made_before_the_timeout() -> None:
    async def target(i: int) -> str:
        await lookup(i, 0)
        await anyio.Event().wait()
        return "never"

    report = await Scorer(timeout=0.05).evaluate(samples(1), target, passes)
    (row,) = report.evaluations
    assert row.error is not None and row.error.type == "TimeoutError"
    assert steps_of(row.trace) == [(0, 0)]


# --- strategies see the trace --------------------------------------------------------------


async def test_tool_called_strategy_passes_and_fails_through_the_scorer() -> None:
    async def target(i: int) -> str:
        if i == 0:
            await lookup(i, 0)
        return "done"

    report = await Scorer().evaluate(
        samples(2), target, ToolCalledStrategy("lookup"), ToolCalledStrategy("lookup_sync")
    )
    outcomes = [(row.name, row.strategy, row.outcome) for row in report.evaluations]
    assert outcomes == [
        ("s0", "ToolCalledStrategy", Outcome.PASSED),
        ("s0", "ToolCalledStrategy#2", Outcome.FAILED),
        ("s1", "ToolCalledStrategy", Outcome.FAILED),
        ("s1", "ToolCalledStrategy#2", Outcome.FAILED),
    ]


async def test_sync_strategies_in_threads_see_the_trace_and_judge_calls_are_not_recorded() -> None:
    def in_a_thread(sample: EvaluationSample, output: object) -> EvaluationResult:
        lookup_sync(99, 99)  # a strategy's own calls never join the sample's trace
        trace = current()
        return EvaluationResult.from_boolean(
            trace is not None and trace.tool_names() == ("lookup",),
            threading.current_thread().name,
        )

    async def target(i: int) -> str:
        await lookup(i, 0)
        return "done"

    report = await Scorer(concurrency=4).evaluate(samples(8), target, in_a_thread)
    assert all(row.passed for row in report.evaluations)
    assert {row.explanation for row in report.evaluations} == {"aeval worker"}
    assert all(steps_of(row.trace) == [(number(row.sample), 0)] for row in report.evaluations)


# --- mock tools ---------------------------------------------------------------------------

TRAVEL_YAML = """\
- name: mysore
  parameters: [Mysore]
  tools:
    get_weather:
      - arguments: {city: Mysore}
        result: sunny, 31°C
    book_ticket:
      - arguments: {attraction: Palace}
        result: {id: 7}
- name: ooty
  parameters: [Ooty]
  tools:
    get_weather:
      - arguments: {city: Ooty}
        error: timeout
- name: delhi
  parameters: [Delhi]
  tools:
    get_weather:
      - arguments: {city: Mysore}
        result: sunny
"""


async def travel_agent(city: str) -> str:
    try:
        weather = get_weather(city)
    except aeval.ToolTimeoutError:
        return f"no weather for {city}"
    except aeval.UnmockedToolCall:
        return "the agent swallowed the error"
    ticket = await book_ticket("Palace")
    return f"{weather}; ticket {ticket['id']}"


async def test_fixtures_serve_results_errors_and_unmocked_calls_never_go_live(
    tmp_path: Path,
) -> None:
    path = tmp_path / "travel.yaml"
    path.write_text(TRAVEL_YAML, encoding="utf-8")
    loaded = await Samples.load(path)
    scorer = Scorer(tools="fixtures")
    report = await scorer.evaluate(loaded, travel_agent, passes)
    assert LIVE == []
    mysore, ooty, delhi = report.evaluations

    assert mysore.passed and mysore.output == "sunny, 31°C; ticket 7"
    assert mysore.trace is not None
    assert [(c.name, c.result, c.mocked) for c in mysore.trace.tool_calls] == [
        ("get_weather", "sunny, 31°C", True),
        ("book_ticket", {"id": 7}, True),
    ]

    assert ooty.passed and ooty.output == "no weather for Ooty"
    assert ooty.trace is not None
    (call,) = ooty.trace.tool_calls
    assert call.error is not None and call.error.type == "ToolTimeoutError"

    assert delhi.outcome is Outcome.ERROR
    assert delhi.error is not None and delhi.error.type == "UnmockedToolCall"
    assert "get_weather(city='Delhi')" in delhi.error.message
    assert delhi.trace is not None and delhi.trace.tool_names() == ("get_weather",)
    assert report.run.tools == "fixtures"


async def test_a_live_run_calls_the_tools_and_leaves_the_header_as_it_was() -> None:
    report = await Scorer().evaluate([EvaluationSample("s", ["Mysore"])], travel_agent, passes)
    assert LIVE == [("get_weather", "Mysore"), ("book_ticket", "Palace")]
    assert report.run.tools is None
    assert "tools" not in report.run.to_dict()
    (row,) = report.evaluations
    assert row.trace is not None and not any(c.mocked for c in row.trace.tool_calls)


async def test_a_sample_with_bad_fixtures_is_an_error_row_naming_it() -> None:
    sample = EvaluationSample("bad", ["Mysore"], metadata={"tool_fixtures": {"get_weather": 3}})
    report = await Scorer(tools="fixtures").evaluate([sample], travel_agent, passes)
    (row,) = report.evaluations
    assert row.error is not None and row.error.type == "ValueError"
    assert "sample 'bad'" in row.error.message and "tools.get_weather" in row.error.message
    assert LIVE == []


async def test_replay_serves_a_recorded_run_per_sample_and_repeat() -> None:
    recorded = await Scorer(repeats=2).evaluate(
        [EvaluationSample("s", ["Mysore"])], travel_agent, passes
    )
    assert len(LIVE) == 4
    LIVE.clear()
    traces: dict[str | tuple[str, int], Trace | None] = {
        (row.name, row.repeat): row.trace for row in recorded.evaluations
    }
    replay = Replay.from_traces(traces, ref="run-1")
    report = await Scorer(repeats=2, tools=replay).evaluate(
        [EvaluationSample("s", ["Mysore"]), EvaluationSample("t", ["Ooty"])],
        travel_agent,
        passes,
    )
    assert LIVE == []
    s0, s1, t0, t1 = report.evaluations
    assert s0.output == s1.output == "live weather of Mysore; ticket 1"
    assert s0.trace is not None and all(c.mocked for c in s0.trace.tool_calls)
    assert [c.result for c in s0.trace.tool_calls] == [
        c.result
        for c in recorded.evaluations[0].trace.tool_calls  # type: ignore[union-attr]
    ]
    for row in (t0, t1):
        assert row.error is not None and row.error.type == "UnmockedToolCall"
        assert "never called 'get_weather'" in row.error.message
    assert report.run.tools == "replay:run-1"


@pytest.mark.parametrize(
    ("tools", "error"),
    [("mock", ValueError), ("", ValueError), (None, ValueError), (Replay, ValueError)],
)
def test_the_tools_option_is_checked(tools: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"'live'.*'fixtures'.*Replay"):
        Scorer(tools=tools)


def test_trace_limits_are_checked() -> None:
    with pytest.raises(TypeError, match="TraceLimits"):
        Scorer(trace_limits={"max_text": 3})  # type: ignore[arg-type]


async def test_trace_limits_bound_what_a_row_keeps() -> None:
    async def target(i: int) -> str:
        record_tool_call("big", {"text": "x" * 100}, result="y" * 100)
        return "done"

    report = await Scorer(trace_limits=TraceLimits(max_text=10)).evaluate(
        samples(1), target, passes
    )
    (row,) = report.evaluations
    assert row.trace is not None and row.trace.truncated == 2
    assert len(row.trace.tool_calls[0].arguments["text"]) < 100


async def test_secrets_in_traces_are_redacted_like_outputs() -> None:
    secret = "sk-live-123456"

    async def target(i: int) -> str:
        record_tool_call("call_api", {"key": secret, "q": "x"}, result=f"echo {secret}")
        record_retrieval([f"doc with {secret}"], query=secret)
        return f"output {secret}"

    report = await Scorer(redact=[secret]).evaluate(samples(1), target, passes)
    (row,) = report.evaluations
    assert secret not in orjson.dumps(row.to_dict()).decode()
    assert row.trace is not None
    assert row.trace.tool_calls[0].arguments == {"key": "[REDACTED]", "q": "x"}


# --- formats -----------------------------------------------------------------------------


def a_trace() -> Trace:
    at = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)
    return Trace(
        tool_calls=(
            ToolCall("get_weather", {"city": "Mysore", "n": [1, 2.5, None]}, {"t": "sunny"},
                     None, at, at, True),
            ToolCall("book_ticket", {"attraction": "Palace"}, None,
                     CallError("ToolTimeoutError", "timed out"), at, at, False, 3),
        ),
    )  # fmt: skip


async def test_rows_jsonl_and_report_json_round_trip_traces(tmp_path: Path) -> None:
    trace = a_trace()

    async def target(i: int) -> str:
        return "done"

    jsonl = tmp_path / "rows.jsonl"
    report = await Scorer(sinks=[JsonlSink(jsonl)]).evaluate(samples(2), target, passes)
    rows = [replace(r, trace=trace) if r.index == 0 else r for r in report.evaluations]
    for row in rows:
        assert EvaluationRow.from_dict(orjson.loads(orjson.dumps(row.to_dict()))) == row

    written = tmp_path / "rows2.jsonl"
    async with JsonlSink(written) as sink:
        for row in rows:
            await sink.send(row)
    read, _ = await read_run(written)
    assert read == rows
    assert "trace" not in orjson.loads(written.read_bytes().splitlines()[1])

    full = EvaluationReport(rows, run=report.run)
    path = await full.save_as(tmp_path / "report.json")
    back = report_from_json(path.read_bytes())
    assert list(back.evaluations) == rows
    entries = orjson.loads(path.read_bytes())["evaluations"]
    assert "trace" in entries[0] and "trace" not in entries[1]


async def test_a_bad_trace_in_rows_jsonl_names_the_file_line_and_field(tmp_path: Path) -> None:
    row = EvaluationRow(EvaluationSample("s", []), "x", "o", Outcome.PASSED, 1.0).to_dict()
    row["trace"] = {"tool_calls": [{"name": 3}]}
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(row) + b"\n")
    with pytest.raises(SampleLoadError) as caught:
        await read_run(path)
    message = str(caught.value)
    assert "rows.jsonl:1:" in message
    assert "field 'trace': tool_calls[0].name must be a string, got 3" in message


async def test_the_run_store_keeps_traces_saved_or_streamed(tmp_path: Path) -> None:
    async def target(i: int) -> str:
        await lookup(i, 0)
        if i == 1:
            raise ValueError("after one call")
        return "done"

    async with RunStore(tmp_path / "runs.sqlite") as store:
        streamed = await Scorer(sinks=[store.sink("bot")]).evaluate(samples(3), target, passes)
        saved = await store.save(streamed, "bot")
        for ref in ("latest~1", saved):
            loaded = await store.load(ref)
            assert [row.trace for row in loaded.evaluations] == [
                row.trace for row in streamed.evaluations
            ]
    assert steps_of(loaded.evaluations[1].trace) == [(1, 0)]


async def test_merged_shards_keep_their_traces() -> None:
    async def target(i: int) -> str:
        await lookup(i, 0)
        return "done"

    every = samples(4)
    first = await Scorer().evaluate(Shard(1, 2).select(every), target, passes)
    second = await Scorer().evaluate(Shard(2, 2).select(every), target, passes)
    assert first.evaluations and second.evaluations
    merged = merge_reports(second, first)
    assert [steps_of(row.trace) for row in merged.evaluations] == [[(i, 0)] for i in range(4)]


async def test_the_run_header_says_where_tool_results_came_from(tmp_path: Path) -> None:
    path = tmp_path / "travel.yaml"
    path.write_text(TRAVEL_YAML, encoding="utf-8")
    jsonl = tmp_path / "rows.jsonl"
    scorer = Scorer(tools="fixtures", sinks=[JsonlSink(jsonl)])
    report = await scorer.evaluate(await Samples.load(path), travel_agent, passes)
    _, header = await read_run(jsonl)
    assert header is not None and header.tools == "fixtures"
    saved = await report.save_as(tmp_path / "report.json")
    assert orjson.loads(saved.read_bytes())["run"]["tools"] == "fixtures"
    assert report_from_json(saved.read_bytes()).run.tools == "fixtures"
    assert "- **Tools**: fixtures" in report.format("markdown")


async def test_a_scorer_inside_a_capture_keeps_its_samples_apart_from_it() -> None:
    async def target(i: int) -> str:
        if i == 0:
            await lookup(i, 0)
        return "done"

    seen: list[Trace | None] = []

    def sees(sample: EvaluationSample, output: object) -> EvaluationResult:
        seen.append(current())
        return EvaluationResult.from_boolean(True)

    with aeval.trace.capture() as outer:
        await lookup(99, 0)
        report = await Scorer().evaluate(samples(2), target, sees)
    assert outer.tool_names() == ("lookup",) and steps_of(outer.trace) == [(99, 0)]
    assert steps_of(report.evaluations[0].trace) == [(0, 0)]
    assert report.evaluations[1].trace is None
    assert steps_of(seen[0]) == [(0, 0)] and seen[1] == Trace()
