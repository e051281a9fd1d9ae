"""Mock tools: a sample's fixtures, replaying a recorded run, and the agent keys of sample
files."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

import aeval
from aeval import (
    EvaluationSample,
    SampleLoadError,
    Samples,
    ToolError,
    ToolTimeoutError,
    UnmockedToolCall,
)
from aeval.trace import (
    CallError,
    Fixtures,
    Replay,
    ToolCall,
    Trace,
    capture,
    recording,
)

pytestmark = pytest.mark.anyio

LIVE: list[str] = []


@aeval.tool
def get_weather(city: str, date: str = "today") -> str:
    LIVE.append(city)
    return f"live weather of {city}"


@aeval.tool
async def book_ticket(attraction: str, people: int = 1) -> dict[str, Any]:
    LIVE.append(attraction)
    return {"live": True}


TOOLS: dict[str, Any] = {
    "get_weather": [
        {"arguments": {"city": "Mysore"}, "result": "sunny, 31°C"},
        {"arguments": {"city": "Ooty"}, "error": "timeout"},
        {"arguments": {"city": "Delhi"}, "error": "service unavailable"},
        {"arguments": {}, "result": "cloudy"},
    ],
    "book_ticket": [{"arguments": {"attraction": "Palace", "people": 2}, "result": {"id": 7}}],
}


@pytest.fixture(autouse=True)
def no_live_calls() -> Any:
    LIVE.clear()
    yield
    assert LIVE == [], "a mocked tool was called live"


async def test_fixtures_serve_the_first_match_by_subset_of_arguments() -> None:
    async with capture(tools=Fixtures(TOOLS)) as trace:
        assert get_weather("Mysore", date="tomorrow") == "sunny, 31°C"
        assert get_weather("Paris") == "cloudy"
        assert await book_ticket("Palace", people=2) == {"id": 7}
    assert [call.mocked for call in trace.tool_calls] == [True, True, True]
    assert trace.tool_calls[0].result == "sunny, 31°C"
    assert dict(trace.tool_calls[0].arguments) == {"city": "Mysore", "date": "tomorrow"}


def test_a_fixture_error_raises_inside_the_tool() -> None:
    with capture(tools=Fixtures(TOOLS)) as trace:
        with pytest.raises(ToolTimeoutError, match="get_weather timed out") as timeout:
            get_weather("Ooty")
        with pytest.raises(ToolError, match="get_weather failed: service unavailable"):
            get_weather("Delhi")
    assert isinstance(timeout.value, TimeoutError)
    assert [call.error.type for call in trace.tool_calls if call.error] == [
        "ToolTimeoutError",
        "ToolError",
    ]


async def test_a_call_with_no_fixture_is_an_unmocked_tool_call_naming_tool_and_arguments() -> None:
    fixtures = Fixtures({"get_weather": TOOLS["get_weather"][:1]})
    with recording(tools=fixtures) as recorder:
        with pytest.raises(UnmockedToolCall) as missing:
            get_weather("Paris")
        with contextlib.suppress(Exception):  # an agent that swallows the error cannot hide it
            await book_ticket("Palace")
    assert str(missing.value).startswith(
        "unmocked tool call get_weather(city='Paris', date='today'): no fixture of "
        "'get_weather' matches these arguments (its fixtures: get_weather(city='Mysore'))"
    )
    assert (missing.value.tool, missing.value.arguments) == (
        "get_weather",
        {"city": "Paris", "date": "today"},
    )
    assert recorder.unmocked is missing.value
    assert isinstance(missing.value, aeval.AevalError | LookupError)
    trace = recorder.trace()
    assert [call.error.type for call in trace.tool_calls if call.error] == [
        "UnmockedToolCall",
        "UnmockedToolCall",
    ]


def test_a_tool_without_fixtures_names_the_tools_that_have_some() -> None:
    with pytest.raises(UnmockedToolCall, match=r"no fixtures for 'book' \(tools with fixtures: "):
        Fixtures(TOOLS).serve("book", {})


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([], "'tools' must be a mapping of tool names to lists of fixtures"),
        ({"t": {"arguments": {}}}, "tools.t must be a list of fixtures"),
        ({"t": ["x"]}, "tools.t[0] must be a mapping with 'arguments' and 'result'"),
        ({"t": [{"arguments": [], "result": 1}]}, "tools.t[0].arguments must be a mapping"),
        ({"t": [{"arguments": {}}]}, "tools.t[0] has neither 'result' nor 'error'"),
        ({"t": [{"result": 1, "error": "x"}]}, "has both 'result' and 'error'"),
        ({"t": [{"result": 1, "args": {}}]}, "tools.t[0] has unknown keys 'args'"),
        ({"t": [{"error": ""}]}, "tools.t[0].error must be a non-empty message"),
    ],
)
def test_malformed_fixtures_are_refused(tools: Any, message: str) -> None:
    with pytest.raises(ValueError) as error:
        Fixtures(tools)
    assert message in str(error.value)


def test_fixtures_of_a_sample() -> None:
    sample = EvaluationSample("s", ["q"], metadata={"tool_fixtures": TOOLS})
    assert Fixtures.from_sample(sample).serve("get_weather", {"city": "Mysore"}) == "sunny, 31°C"
    with pytest.raises(UnmockedToolCall):
        Fixtures.from_sample(EvaluationSample("t", ["q"])).serve("get_weather", {})


# --- replay ----------------------------------------------------------------------------------


def recorded() -> Trace:
    return Trace(
        tool_calls=(
            ToolCall("get_weather", {"city": "Mysore", "date": "today"}, "sunny"),
            ToolCall("get_weather", {"city": "Mysore", "date": "today"}, "rainy"),
            ToolCall("book_ticket", {"attraction": "Palace", "people": 1}, None,
                     CallError("ConnectionError", "refused")),
            ToolCall("book_ticket", {"attraction": "Zoo", "people": 1}, None,
                     CallError("TimeoutError", "")),
        )
    )  # fmt: skip


async def test_replay_serves_recorded_results_by_tool_arguments_and_occurrence() -> None:
    replay = Replay.from_traces({"trip": recorded()}, ref="run-1")
    with recording(tools=replay.for_sample("trip")) as recorder:
        assert get_weather("Mysore") == "sunny"
        assert get_weather(date="today", city="Mysore") == "rainy"
        with pytest.raises(ToolError, match="ConnectionError: refused") as failed:
            await book_ticket("Palace")
        with pytest.raises(ToolTimeoutError):
            await book_ticket("Zoo")
    assert failed.value.type == "ConnectionError"
    assert all(call.mocked for call in recorder.trace().tool_calls)
    again = replay.for_sample("trip")  # each (sample, repeat) counts its own occurrences
    assert again.serve("get_weather", {"city": "Mysore", "date": "today"}) == "sunny"


def test_a_changed_argument_is_one_unmocked_call_naming_the_difference() -> None:
    session = Replay.from_traces({"trip": recorded()}, ref="run-1").for_sample("trip")
    with pytest.raises(UnmockedToolCall) as changed:
        session.serve("get_weather", {"city": "Mysuru", "date": "today"})
    assert str(changed.value) == (
        "unmocked tool call get_weather(city='Mysuru', date='today') in sample 'trip': the "
        "closest recorded call is get_weather(city='Mysore', date='today'): 'city' differs: "
        "recorded 'Mysore', now 'Mysuru'"
    )


def test_replay_explains_a_call_made_more_often_or_never_recorded() -> None:
    session = Replay.from_traces({"trip": recorded()}, ref="run-1").for_sample("trip")
    for _ in range(2):
        session.serve("get_weather", {"city": "Mysore", "date": "today"})
    with pytest.raises(
        UnmockedToolCall, match=r"recorded this call 2 time\(s\) and this is call 3"
    ):
        session.serve("get_weather", {"city": "Mysore", "date": "today"})
    with pytest.raises(UnmockedToolCall, match="never called 'search' in this sample"):
        session.serve("search", {})
    with pytest.raises(
        UnmockedToolCall, match=r"never called 'search' in this sample \(it called no tool\)"
    ):
        Replay.from_traces({}).for_sample("other").serve("search", {})


@aeval.tool
def summarise(text: str) -> str:
    LIVE.append("summarise")
    return f"summary of {len(text)} characters: " + "x" * 6000


def test_fixtures_never_match_arguments_that_differ_past_the_trace_limits() -> None:
    head = "a" * 5000
    tools = Fixtures({"summarise": [{"arguments": {"text": head + "1"}, "result": "one"}]})
    with recording(tools=tools):
        assert summarise(head + "1") == "one"
        with pytest.raises(UnmockedToolCall, match="no fixture of 'summarise' matches"):
            summarise(head + "2")
    deep: Any = "leaf"
    for _ in range(12):
        deep = [deep]
    other: Any = "other leaf"
    for _ in range(12):
        other = [other]
    tools = Fixtures({"summarise": [{"arguments": {"text": deep}, "result": "deep"}]})
    with recording(tools=tools):
        assert summarise(deep) == "deep"
        with pytest.raises(UnmockedToolCall):
            summarise(other)
    many = {"text": list(range(150))}
    tools = Fixtures({"summarise": [{"arguments": many, "result": "many"}]})
    with recording(tools=tools), pytest.raises(UnmockedToolCall):
        summarise([*range(149), 999])  # type: ignore[arg-type]


async def test_replay_refuses_a_call_its_recording_cut_saying_so_and_serves_a_whole_one() -> None:
    long_text = "word " * 1200  # 6,000 characters: cut to 4,000 in the default trace
    sample = EvaluationSample("long", [long_text])

    def agent(text: str) -> str:
        return summarise(text)

    def passes(sample: EvaluationSample, output: object) -> aeval.EvaluationResult:
        return aeval.EvaluationResult.from_boolean(True)

    recorded = await aeval.Scorer().evaluate([sample], agent, passes)
    LIVE.clear()
    (call,) = recorded.evaluations[0].trace.tool_calls  # type: ignore[union-attr]
    assert call.truncated == 2  # the argument and the result
    replay = Replay.from_traces({"long": recorded.evaluations[0].trace}, ref="run-1")
    report = await aeval.Scorer(tools=replay).evaluate([sample], agent, passes)
    (row,) = report.evaluations
    assert row.error is not None and row.error.type == "UnmockedToolCall"
    assert "no recorded call matches it whole, and the replayed run 'run-1' recorded" in (
        row.error.message
    )
    assert "cut to its trace limits (2 value(s) cut)" in row.error.message
    assert "Scorer(trace_limits=aeval.trace.TraceLimits(" in row.error.message

    whole = aeval.trace.TraceLimits(max_text=10_000)
    recorded = await aeval.Scorer(trace_limits=whole).evaluate([sample], agent, passes)
    LIVE.clear()
    replay = Replay.from_traces({"long": recorded.evaluations[0].trace}, ref="run-2")
    report = await aeval.Scorer(tools=replay, trace_limits=whole).evaluate([sample], agent, passes)
    (row,) = report.evaluations
    assert row.error is None and row.output == "summary of 6000 characters: " + "x" * 6000


def test_replay_never_serves_a_result_its_recording_cut() -> None:
    cut = ToolCall("summarise", {"text": "short"}, "summary… [2003 of 6003 characters cut]")
    cut = ToolCall(cut.name, cut.arguments, cut.result, truncated=1)
    session = Replay.from_traces({"s": Trace(tool_calls=(cut,))}, ref="run-1").for_sample("s")
    with pytest.raises(UnmockedToolCall) as refused:
        session.serve("summarise", {"text": "short"})
    assert str(refused.value).startswith(
        "tool call summarise(text='short') in sample 's' cannot be replayed: the replayed run "
        "'run-1' recorded summarise(text='short') cut to its trace limits (1 value(s) cut)"
    )


def test_replay_keys_by_repeat_when_given() -> None:
    first = Trace(tool_calls=(ToolCall("t", {}, "first"),))
    second = Trace(tool_calls=(ToolCall("t", {}, "second"),))
    replay = Replay.from_traces({("s", 0): first, ("s", 1): second})
    assert replay.for_sample("s", 1).serve("t", {}) == "second"
    assert replay.for_sample("s").serve("t", {}) == "first"


async def test_replay_needs_its_traces_loaded() -> None:
    replay = Replay("latest")
    assert not replay.loaded
    with pytest.raises(RuntimeError, match="not loaded"):
        replay.for_sample("s")
    with pytest.raises(ValueError, match="stored run's reference"):
        Replay("")


# --- sample keys -----------------------------------------------------------------------------

AGENT_YAML = """\
- name: trip
  parameters: ["Plan a day in Mysore"]
  expected-tools: [get_weather, book_ticket]
  forbidden-tools: delete_booking
  expected-tool-arguments:
    get_weather: {city: Mysore}
  tools:
    get_weather:
      - arguments: {city: Mysore}
        result: sunny
"""


def test_agent_keys_load_into_the_sample_metadata(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(AGENT_YAML, encoding="utf-8")
    (sample,) = Samples.load_sync(path)
    assert dict(sample.metadata) == {
        "expected_tools": ["get_weather", "book_ticket"],
        "forbidden_tools": ["delete_booking"],
        "expected_tool_arguments": {"get_weather": {"city": "Mysore"}},
        "tool_fixtures": {"get_weather": [{"arguments": {"city": "Mysore"}, "result": "sunny"}]},
    }


def test_agent_keys_load_from_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"name": "a", "parameters": [], "expected-tools": ["x"], "tools": {"x": []}}\n',
        encoding="utf-8",
    )
    (sample,) = Samples.load_sync(path)
    assert sample.metadata["expected_tools"] == ["x"]
    assert sample.metadata["tool_fixtures"] == {"x": []}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("expected-tools: {a: 1}", "'expected-tools' must be a list of tool names"),
        ("forbidden-tools: [1]", "'forbidden-tools' must be a list of tool names"),
        ("expected-tool-arguments: [a]", "'expected-tool-arguments' must map each tool name"),
        ("tools: {t: [{arguments: {}}]}", "tools.t[0] has neither 'result' nor 'error'"),
    ],
)
def test_malformed_agent_keys_name_the_file_line_and_sample(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"- name: trip\n  parameters: []\n  {line}\n", encoding="utf-8")
    with pytest.raises(SampleLoadError) as error:
        Samples.load_sync(path)
    assert str(error.value).startswith(f"{path}:3, sample 'trip': {message}")


def test_a_served_result_is_a_copy_the_agent_may_change() -> None:
    fixtures = Fixtures({"t": [{"arguments": {}, "result": {"items": [1]}}]})
    fixtures.serve("t", {})["items"].append(2)
    assert fixtures.serve("t", {}) == {"items": [1]}
