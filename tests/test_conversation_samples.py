"""Conversation samples: the ``turns:`` and ``user:`` keys, their Python form, per-turn samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval import EvaluationSample, SampleLoadError, Samples, ScriptedTurn, SimulatedUser
from aeval.strategies.conversation import each_turn_sample

SCRIPTED = """\
- name: trip
  tags: [travel]
  must-contain: [Mysore]
  turns:
    - Plan a trip to Mysore
    - user: Make it cheaper
      must-contain: [bus]
      expected-tools: get_bus_price
      expected-output: "Take the bus"
"""


def test_scripted_turns_load_from_yaml_with_their_expectations(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCRIPTED, encoding="utf-8")
    (sample,) = Samples.load_sync(path)
    assert sample.is_conversation and sample.user is None
    assert sample.parameters.values == ()
    assert sample.turns == (
        ScriptedTurn("Plan a trip to Mysore"),
        ScriptedTurn(
            "Make it cheaper",
            {
                "must_contain": ["bus"],
                "expected_tools": ["get_bus_price"],
                "expected_output": "Take the bus",
            },
        ),
    )
    first = each_turn_sample(sample, 1, "Plan a trip to Mysore")
    second = each_turn_sample(sample, 2, "Make it cheaper")
    assert first.parameters["question"] == "Plan a trip to Mysore"
    assert not first.is_conversation and first.metadata["must_contain"] == ["Mysore"]
    assert first.expected_output is None
    assert second.metadata["must_contain"] == ["bus"]
    assert second.metadata["expected_tools"] == ["get_bus_price"]
    assert second.expected_output == "Take the bus"
    assert second.name == "trip" and second.tags == ("travel",)


def test_simulated_user_loads_from_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"name": "sim", "user": {"persona": "a student", "goal": "a cheap trip", '
        '"first": ["Hi"], "max-turns": 3}}\n',
        encoding="utf-8",
    )
    (sample,) = Samples.load_sync(path)
    assert sample.user == SimulatedUser("a student", "a cheap trip", ("Hi",), 3)
    assert sample.turns == () and sample.is_conversation


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("  turns: []\n", 2, "'turns' must be a non-empty list of user messages"),
        ("  turns: [Hi, {must-contain: [x]}]\n", 2, "turn 2 of 'turns' has no 'user' message"),
        ("  turns:\n    - Hi\n    - {user: Yo, colour: red}\n", 3, "unknown key 'colour'"),
        ("  turns: [{user: Hi, must-contain: 3}]\n", 2, "'must-contain' must be a text"),
        ("  turns: [{user: Hi, expected-tools: [1]}]\n", 2, "'expected-tools' must be a list"),
        ("  user: {persona: p}\n", 2, "'user' needs a 'goal'"),
        ("  user: {persona: p, goal: g, max-turns: 0}\n", 2, "'user.max-turns' must be"),
        ("  user: {persona: p, goal: g, first: [a, b], max-turns: 1}\n", 2, "less than the 2"),
        ("  turns: [Hi]\n  user: {persona: p, goal: g}\n", 3, "has both 'turns'"),
        ("  parameters: []\n  metadata: {turns: 3}\n", 3, "'metadata' holds 'turns'"),
    ],
)
def test_malformed_conversation_keys_name_file_line_and_sample(
    tmp_path: Path, body: str, line: int, message: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- name: c\n" + body, encoding="utf-8")
    with pytest.raises(SampleLoadError) as error:
        Samples.load_sync(path)
    text = str(error.value)
    assert text.startswith(f"{path}:{line}, sample 'c': ")
    assert message in text


def test_a_sample_without_parameters_or_conversation_still_needs_parameters(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- name: c\n  expected-output: x\n", encoding="utf-8")
    with pytest.raises(SampleLoadError, match="no 'parameters'"):
        Samples.load_sync(path)


def test_python_fields_keep_the_signature_and_copy_through_metadata() -> None:
    sample = EvaluationSample(
        "trip", turns=["Hi", ScriptedTurn("Cheaper?", {"must_contain": ["bus"]})]
    )
    assert [turn.user for turn in sample.turns] == ["Hi", "Cheaper?"]
    copy = EvaluationSample(sample.name, metadata=sample.metadata)
    assert copy.turns == sample.turns
    user = SimulatedUser("p", "g", ("Hi",), 2)
    assert EvaluationSample("sim", user=user).user == user
    assert not EvaluationSample("plain", ["q"], "a").is_conversation
    with pytest.raises(ValueError, match="not both"):
        EvaluationSample("x", turns=["a"], user=user)
    with pytest.raises(ValueError, match="at least one"):
        EvaluationSample("x", turns=[])
    with pytest.raises(TypeError, match="turn 1 must be a str"):
        EvaluationSample("x", turns=[3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_turns"):
        EvaluationSample("x", user=SimulatedUser("p", "g", ("a", "b"), 1))
    with pytest.raises(ValueError, match=r"Sample 'x': metadata 'turns' holds a conversation"):
        EvaluationSample("x", metadata={"turns": 3})
    with pytest.raises(ValueError, match=r"metadata 'simulated_user' holds a simulated user"):
        EvaluationSample("x", metadata={"simulated_user": "bob"})
