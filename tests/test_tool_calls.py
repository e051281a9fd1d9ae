"""ToolCallsStrategy, the expected-calls / functions sample keys and load_bfcl."""

from __future__ import annotations

import itertools
import random
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from _cli import Cli, cli, rows_of, write_config

import aeval
from aeval import EvaluationSample, SampleLoadError, Samples
from aeval.strategies import ToolCallsStrategy
from aeval.strategies._call_match import _any_order, _in_order
from aeval.trace import ToolCall, Trace, using

__all__ = ["cli"]

BFCL = Path(__file__).parent / "data" / "bfcl"

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}


def sample(calls: Any, **metadata: Any) -> EvaluationSample:
    return EvaluationSample("s", ["q"], metadata={"expected_calls": calls, **metadata})


class Checked:
    def __init__(self, result: aeval.EvaluationResult) -> None:
        self.passed = result.passed
        self.score = result.score
        self.explanation = result.explanation or ""
        self.metadata = result.metadata
        self.inapplicable = result.inapplicable


def check(
    strategy: ToolCallsStrategy, the_sample: EvaluationSample, *calls: tuple[str, dict[str, Any]]
) -> Checked:
    with using(Trace(tuple(ToolCall(name, arguments) for name, arguments in calls))):
        return Checked(strategy.evaluate(the_sample, None))


def passes(
    the_sample: EvaluationSample, *calls: tuple[str, dict[str, Any]], **options: Any
) -> bool:
    return check(ToolCallsStrategy(**options), the_sample, *calls).passed


def test_any_of_and_optional_arguments() -> None:
    weather = sample(
        [
            {
                "name": "get_weather",
                "arguments": {
                    "city": {"any-of": ["Mysore", "Mysuru"]},
                    "unit": {"any-of": ["celsius", "C"], "optional": True},
                },
            }
        ]
    )
    assert passes(weather, ("get_weather", {"city": "Mysuru"}))
    assert passes(weather, ("get_weather", {"city": "Mysore", "unit": "C"}))
    assert not passes(weather, ("get_weather", {"city": "Mysore", "unit": "kelvin"}))
    assert not passes(weather, ("get_weather", {"unit": "C"}))
    assert not passes(weather, ("get_weather", {"city": "Mysore", "days": 2}))


def test_rules_nest_inside_lists_and_mappings() -> None:
    nested = sample(
        [
            {
                "name": "book",
                "arguments": {
                    "guests": [{"name": "Ana", "age": {"any-of": [30, 31]}}, "Bo"],
                    "room": {"type": "double", "view": {"optional": True}},
                    "raw": {"equals": {"any-of": [1]}},
                },
            }
        ]
    )
    good = {
        "guests": [{"name": "Ana", "age": 31}, "Bo"],
        "room": {"type": "double", "view": "sea"},
        "raw": {"any-of": [1]},
    }
    assert passes(nested, ("book", good))
    assert passes(nested, ("book", {**good, "room": {"type": "double"}}))
    assert not passes(nested, ("book", {**good, "guests": [{"name": "Ana", "age": 32}, "Bo"]}))
    assert not passes(nested, ("book", {**good, "room": {"type": "double", "bed": "king"}}))
    assert not passes(nested, ("book", {**good, "raw": 1}))


def test_an_empty_expected_calls_means_no_tool() -> None:
    none = sample([])
    assert passes(none)
    result = check(ToolCallsStrategy(), none, ("search", {"q": "x"}))
    assert not result.passed
    assert result.explanation == (
        "Call 1, search(q='x'), was not expected: the sample expects no tool call"
    )


def test_a_sample_without_expected_calls_is_not_applicable_saying_what_to_add() -> None:
    result = check(ToolCallsStrategy(), EvaluationSample("bare", ["q"]))
    assert not result.passed and result.inapplicable and result.score is None
    assert "states no expected-calls" in result.explanation
    assert "add expected-calls:" in result.explanation


def test_strict_types_python_types_and_normalized_strings() -> None:
    count = sample([{"name": "f", "arguments": {"n": 1, "x": 2.0, "s": "New York"}}])
    good = {"n": 1, "x": 2.0, "s": "New York"}
    assert passes(count, ("f", good))
    assert passes(count, ("f", {**good, "x": 2}))  # an int for a float
    assert not passes(count, ("f", {**good, "n": True}))  # a bool is not an int
    assert not passes(count, ("f", {**good, "n": 1.0}))  # a float is not an int
    assert passes(count, ("f", {**good, "n": True}), types="python")
    assert not passes(count, ("f", {**good, "s": "new-york,"}))
    assert passes(count, ("f", {**good, "s": "new-york,"}), strings="normalized")
    assert not passes(count, ("f", {**good, "s": "new york!"}), strings="normalized")


def test_functions_check_required_and_unknown_arguments() -> None:
    loose = sample([{"name": "get_weather"}], functions=[WEATHER])
    assert passes(loose, ("get_weather", {"city": "Ooty"}))
    result = check(ToolCallsStrategy(), loose, ("get_weather", {"unit": "C"}))
    assert "the required 'city' is missing" in result.explanation
    result = check(ToolCallsStrategy(), loose, ("get_weather", {"city": "Ooty", "days": 3}))
    assert "'days' is not a parameter of 'get_weather'" in result.explanation
    openai_form = sample(
        [{"name": "get_weather"}], functions=[{"type": "function", "function": WEATHER}]
    )
    assert not passes(openai_form, ("get_weather", {"unit": "C"}))


def test_a_repeated_tool_with_one_wrong_call_fails() -> None:
    twice = sample(
        [
            {"name": "get_weather", "arguments": {"city": "Mysore"}},
            {"name": "get_weather", "arguments": {"city": "Ooty"}},
        ],
        expected_calls_order="any",
    )
    assert passes(twice, ("get_weather", {"city": "Ooty"}), ("get_weather", {"city": "Mysore"}))
    result = check(
        ToolCallsStrategy(),
        twice,
        ("get_weather", {"city": "Mysore"}),
        ("get_weather", {"city": "Mysore"}),
    )
    assert not result.passed
    assert result.score == 0.5
    assert result.explanation == (
        "Expected call 2, get_weather(city='Ooty'), was not matched: the closest, call 2, "
        "get_weather(city='Mysore'), differs: 'city' is 'Mysore', expected 'Ooty'"
    )
    assert result.metadata["matched"] == [[0, 0]]
    assert result.metadata["unexpected_calls"] == [1]


def test_optimal_matching_finds_the_assignment_greedy_misses() -> None:
    calls = sample(
        [
            {"name": "f", "arguments": {"x": {"any-of": [1, 2]}}},
            {"name": "f", "arguments": {"x": 1}},
        ],
        expected_calls_order="any",
    )
    made = (("f", {"x": 1}), ("f", {"x": 2}))
    assert passes(calls, *made)
    assert not passes(calls, *made, matching="greedy")


def test_orders() -> None:
    two = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]
    assert passes(sample(two), ("a", {}), ("b", {}))
    assert not passes(sample(two), ("b", {}), ("a", {}))
    assert passes(sample(two, expected_calls_order="any"), ("b", {}), ("a", {}))
    assert passes(sample(two), ("b", {}), ("a", {}), order="any")
    in_order = sample(two, expected_calls_order="in-order")
    assert passes(in_order, ("a", {}), ("c", {}), ("b", {}), extra_calls="allow")
    assert not passes(in_order, ("b", {}), ("c", {}), ("a", {}), extra_calls="allow")
    assert not passes(in_order, ("a", {}), ("c", {}), ("b", {}))
    result = check(ToolCallsStrategy(), sample(two), ("b", {}), ("a", {}))
    assert "call 2, a(), fits it but is out of position" in result.explanation


def test_extra_and_missing_calls() -> None:
    one = sample([{"name": "a", "arguments": {"x": 1}}])
    assert passes(one, ("a", {"x": 1}), ("b", {}), extra_calls="allow", order="any")
    assert not passes(one, extra_calls="allow")
    assert passes(one, missing_calls="allow")
    assert not passes(one, ("b", {}), missing_calls="allow")


def test_argument_modes_and_per_tool_overrides() -> None:
    call = sample([{"name": "search", "arguments": {"q": "Mysore", "n": 3}}])
    assert passes(call, ("search", {"q": "Mysore", "n": 3, "lang": "en"}), arguments="superset")
    assert not passes(call, ("search", {"q": "Mysore"}), arguments="superset")
    assert passes(call, ("search", {"q": "Mysore"}), arguments="subset")
    assert not passes(call, ("search", {"q": "Mysore", "lang": "en"}), arguments="subset")
    assert passes(call, ("search", {"q": "Ooty"}), arguments="ignore")
    assert passes(call, ("search", {"q": "Mysore", "n": 9}), tool_arguments={"search": ["q"]})
    assert passes(
        call,
        ("search", {"q": "MYSORE"}),
        tool_arguments={
            "search": lambda actual, expected: actual["q"].lower() == expected["q"].lower()
        },
    )
    with pytest.raises(TypeError, match="tool_arguments\\['search'\\] must be"):
        ToolCallsStrategy(tool_arguments={"search": 3})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="arguments must be"):
        ToolCallsStrategy(arguments="some")  # type: ignore[arg-type]


def test_trajectory_presets() -> None:
    ref = sample([{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": 2}}])
    unordered = ToolCallsStrategy.trajectory("unordered")
    assert check(unordered, ref, ("b", {"y": 2}), ("a", {"x": 1})).passed
    assert not check(
        ToolCallsStrategy.trajectory("strict"), ref, ("b", {"y": 2}), ("a", {"x": 1})
    ).passed
    superset = ToolCallsStrategy.trajectory("superset")
    assert check(superset, ref, ("c", {}), ("b", {"y": 2}), ("a", {"x": 1})).passed
    subset = ToolCallsStrategy.trajectory("subset")
    assert check(subset, ref, ("b", {"y": 2})).passed
    assert not check(subset, ref, ("b", {"y": 2}), ("c", {})).passed
    assert check(
        ToolCallsStrategy.trajectory("subset", arguments="superset"), ref, ("b", {"y": 2, "z": 0})
    ).passed
    assert repr(ToolCallsStrategy.bfcl()) == "ToolCallsStrategy(preset='bfcl')"


def test_the_number_of_pairs_compared_is_bounded() -> None:
    many = sample(
        [{"name": "f", "arguments": {"i": i}} for i in range(150)], expected_calls_order="any"
    )
    result = check(ToolCallsStrategy(), many, *[("f", {"i": i}) for i in range(150)])
    assert not result.passed
    assert "more than 20000 pairs" in result.explanation


SAMPLES = """\
- name: weather
  parameters: ["What's the weather in Mysore, in celsius?"]
  functions:
    - {name: get_weather, parameters: {type: object, properties: {city: {type: string},
       unit: {type: string}}, required: [city]}}
  expected-calls:
    - name: get_weather
      arguments:
        city: {any-of: [Mysore, Mysuru]}
        unit: {any-of: [celsius, C], optional: true}
  expected-calls-order: any
"""


def test_sample_files_keep_the_keys_in_metadata(tmp_path: Path) -> None:
    (tmp_path / "samples.yaml").write_text(SAMPLES, encoding="utf-8")
    (loaded,) = anyio.run(Samples.load, tmp_path / "samples.yaml")
    assert loaded.metadata["expected_calls"][0]["arguments"]["city"] == {
        "any-of": ["Mysore", "Mysuru"]
    }
    assert loaded.metadata["expected_calls_order"] == "any"
    assert loaded.metadata["functions"][0]["name"] == "get_weather"
    assert passes(loaded, ("get_weather", {"city": "Mysuru", "unit": "C"}))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("expected-calls", "get_weather", "'expected-calls' must be a list of calls"),
        ("expected-calls", "[{arguments: {}}]", "expected call 1 has no 'name'"),
        ("expected-calls", "[{name: f, args: {}}]", "unknown keys ['args']"),
        ("expected-calls", "[{name: f, arguments: {x: {any-of: 3}}}]", "'any-of' must be a list"),
        ("expected-calls", "[{name: f, arguments: {x: {any-of: []}}}]", "accepts no value"),
        (
            "expected-calls",
            "[{name: f, arguments: {x: {optional: maybe}}}]",
            "'optional' must be true or false",
        ),
        ("expected-calls-order", "sideways", "must be exact, in-order or any"),
        ("functions", "[{parameters: {}}]", "function 1 has no 'name'"),
    ],
)
def test_bad_keys_name_the_sample_and_the_fix(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    path = tmp_path / "samples.yaml"
    path.write_text(f"- name: bad\n  parameters: [q]\n  {key}: {value}\n", encoding="utf-8")
    with pytest.raises(SampleLoadError, match="sample 'bad'") as caught:
        anyio.run(Samples.load, path)
    assert message in str(caught.value)


def test_load_bfcl_gives_functions_and_expected_calls() -> None:
    samples = aeval.load_bfcl(BFCL / "BFCL_v4_simple_python.json")
    assert len(samples) == 20
    first = samples[0]
    assert first.name == "simple_python_0"
    assert first.tags == ("simple_python",)
    assert first.parameters["messages"][0]["role"] == "user"
    assert first.metadata["expected_calls"] == [
        {
            "name": "calculate_triangle_area",
            "arguments": {
                "base": {"any-of": [10]},
                "height": {"any-of": [5]},
                "unit": {"any-of": ["units"], "optional": True},
            },
        }
    ]
    bfcl = ToolCallsStrategy.bfcl()
    assert check(bfcl, first, ("calculate_triangle_area", {"base": 10, "height": 5})).passed
    assert check(
        bfcl, first, ("calculate_triangle_area", {"base": 10, "height": 5, "unit": "Units"})
    ).passed
    assert not check(bfcl, first, ("calculate_triangle_area", {"base": 10, "height": True})).passed
    dotless = aeval.load_bfcl(BFCL / "BFCL_v4_simple_python.json", underscore_to_dot=True)
    assert dotless[1].metadata["expected_calls"][0]["name"] == "math_factorial"
    assert dotless[1].metadata["functions"][0]["name"] == "math_factorial"


def test_load_bfcl_errors_name_the_file(tmp_path: Path) -> None:
    shutil.copy(BFCL / "BFCL_v4_parallel.json", tmp_path / "BFCL_v4_parallel.json")
    with pytest.raises(FileNotFoundError, match="possible_answer"):
        aeval.load_bfcl(tmp_path / "BFCL_v4_parallel.json")
    (tmp_path / "answers.json").write_text('{"id": "parallel_0", "ground_truth": []}\n')
    with pytest.raises(SampleLoadError, match=r"sample 'parallel_1'.*no possible answer"):
        aeval.load_bfcl(tmp_path / "BFCL_v4_parallel.json", tmp_path / "answers.json")


TARGET = """\
import aeval


def agent(city: str) -> str:
    aeval.trace.record_tool_call("get_weather", {"city": city})
    return "done"
"""

CONFIG = """\
samples: samples.yaml
target: agent_target:agent
strategies:
  - name: tool_calls
  - name: tool_calls
    preset: bfcl
    label: bfcl
  - name: tool_calls
    preset: superset
    arguments: ignore
    label: superset
output:
  dir: out
"""


def test_tool_calls_by_name_in_a_config_file(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "agent_target.py").write_text(TARGET)
    (tmp_path / "samples.yaml").write_text(
        SAMPLES.replace("What's the weather in Mysore, in celsius?", "Mysore")
        + SAMPLES.replace("weather", "paris", 1).replace(
            "What's the weather in Mysore, in celsius?", "Paris"
        )
    )
    result = cli("run", write_config(tmp_path, CONFIG), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    outcomes = {
        (row["name"], row["strategy"]): row["outcome"]
        for row in rows_of(tmp_path / "out" / "rows.jsonl")
    }
    assert outcomes == {
        ("weather", "ToolCallsStrategy"): "passed",
        ("weather", "bfcl"): "passed",
        ("weather", "superset"): "passed",
        ("paris", "ToolCallsStrategy"): "failed",
        ("paris", "bfcl"): "failed",
        ("paris", "superset"): "passed",
    }
    bad = write_config(
        tmp_path, CONFIG.replace("preset: bfcl", "preset: bfcl\n    order: any"), "bad.yaml"
    )
    refused = cli("run", bad, cwd=tmp_path)
    assert refused.returncode == 2
    assert "preset 'bfcl' sets order itself" in refused.stderr


def _largest(candidates: list[list[int]], size: int, *, ordered: bool) -> int:
    choose = itertools.combinations if ordered else itertools.permutations
    best = 0
    for count in range(min(len(candidates), size) + 1):
        for expected in itertools.combinations(range(len(candidates)), count):
            for actual in choose(range(size), count):
                if all(a in candidates[e] for e, a in zip(expected, actual, strict=True)):
                    best = count
    return best


def test_optimal_matching_is_a_largest_one_against_brute_force() -> None:
    rng = random.Random(34)
    for _ in range(400):
        size = rng.randint(0, 4)
        candidates = [
            [a for a in range(size) if rng.random() < 0.45] for _ in range(rng.randint(0, 4))
        ]
        in_order = _in_order(candidates, greedy=False)
        chain = sorted(in_order.items())
        assert all(a in candidates[e] for e, a in chain)
        assert all(left[1] < right[1] for left, right in itertools.pairwise(chain))
        assert len(in_order) == _largest(candidates, size, ordered=True)
        any_order = _any_order(candidates, greedy=False)
        assert len(set(any_order.values())) == len(any_order)
        assert all(a in candidates[e] for e, a in any_order.items())
        assert len(any_order) == _largest(candidates, size, ordered=False)
