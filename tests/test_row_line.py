"""``row_line`` (the fast rows.jsonl encoder) writes the bytes of ``EvaluationRow.to_dict``
+ orjson."""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import orjson
import pytest

from aeval import (
    ErrorInfo,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    Parameters,
    Transcript,
    Turn,
)
from aeval._reporting._codec import row_line
from aeval._util._jsonsafe import dumps
from aeval.trace import ModelCall, ToolCall, Trace


def reference(row: EvaluationRow) -> bytes:
    """The general path: EvaluationRow.to_dict, then the never-raising dumps, notes when
    needed."""
    data = row.to_dict()
    line, notes = dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    if notes:
        data["notes"] = list(notes)
        line, _ = dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    return line


TRACE = Trace(
    tool_calls=(ToolCall("get_weather", {"city": "Mysore"}), ToolCall("find", {})),
    model_calls=(ModelCall("gpt", prompt_tokens=3, completion_tokens=4, duration=0.5),),
)
TRANSCRIPT = Transcript((Turn("Plan a trip", "Day 1: the palace."), Turn("Budget?", "5000")))


class Loop(list[Any]):
    pass


def looping() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


class BadStr:
    def __str__(self) -> str:
        raise RuntimeError("no text")


PARAMETERS: list[Any] = [
    [],
    ["text"],
    ["a", 1, 2.5, None, True, [1, 2]],
    {"question": "Hi?", "lang": "en"},
    {"only": "named"},
    Parameters.from_pairs([("question", "Hi?"), (None, "unnamed")]),
    [{"a": 1}],
    [MappingProxyType({"b": 2})],
    [(1, 2)],
    [{1, 2}],
    [decimal.Decimal("1.5")],
    [Loop([1])],
    ["\ud800 cut"],
    [2**70],
    [looping()],
    [BadStr()],
]

OUTPUTS: list[Any] = [
    "text",
    None,
    {"answer": 1, 2: "int key"},
    {"nested": [{(1, 2): "tuple key", None: 0}]},
    TRANSCRIPT,
    math.nan,
    2**80,
    "\udcff",
    looping(),
    object(),
]


def rows() -> list[EvaluationRow]:
    made = []
    for number, params in enumerate(PARAMETERS):
        sample = EvaluationSample(
            f"s{number}",
            params,
            expected_output=None if number % 3 else f"expected {number}",
            tags=("a", "b") if number % 2 else (),
            metadata={"source": number} if number % 4 == 1 else {},
        )
        for position, output in enumerate(OUTPUTS):
            kind = (number + position) % 4
            made.append(
                EvaluationRow(
                    sample,
                    None if kind == 3 else f"strategy{position}",
                    output,
                    [Outcome.PASSED, Outcome.FAILED, Outcome.UNSCORED, Outcome.ERROR][kind],
                    [1.0, 0.0, None, 0.0][kind],
                    explanation=None if kind == 0 else f"why {kind}",
                    metadata={"judge": "x", "n": position} if kind == 1 else {},
                    error=ErrorInfo("ValueError", "bad", "Traceback...", "strategy")
                    if kind == 3
                    else (ErrorInfo("KeyError", "k", None, "function") if kind == 2 else None),
                    duration=0.25 * position,
                    strategy_duration=0.001,
                    index=number,
                    repeat=position % 2,
                    position=position,
                    timestamp=1_700_000_000.5 if kind == 2 else None,
                    trace=TRACE if position % 3 == 0 else None,
                )
            )
    return made


def test_row_line_writes_the_bytes_of_row_to_dict_and_orjson() -> None:
    made = rows()
    assert len(made) == len(PARAMETERS) * len(OUTPUTS)
    for row in made:
        assert row_line(row) == reference(row), row
    # twice, in reverse: the kept parameters and trace of the previous row never leak
    for row in reversed(made):
        assert row_line(row) == reference(row), row


def test_rows_sharing_a_sample_and_a_trace_each_get_their_own_fields() -> None:
    sample = EvaluationSample("s", ["x"], expected_output="x")
    other = EvaluationSample("t", {"named": "y"})
    trace = Trace(tool_calls=(ToolCall("a", {}),))
    made = [
        EvaluationRow(sample, "one", "x", Outcome.PASSED, 1.0, trace=trace),
        EvaluationRow(sample, "two", "y", Outcome.FAILED, 0.0, trace=trace, position=1),
        EvaluationRow(other, "one", "y", Outcome.PASSED, 1.0, trace=Trace()),
        EvaluationRow(sample, "one", "x", Outcome.PASSED, 1.0),
    ]
    lines = [orjson.loads(row_line(row)) for row in made]
    assert [line["parameters"] for line in lines] == [
        ["x"],
        ["x"],
        [{"name": "named", "value": "y"}],
        ["x"],
    ]
    assert lines[0]["trace"] == lines[1]["trace"] == trace.to_dict()
    assert lines[2]["trace"] == Trace().to_dict()
    assert "trace" not in lines[3]


@pytest.mark.parametrize("encode", [row_line, reference])
def test_a_line_that_needed_stand_ins_says_so(encode: Callable[[EvaluationRow], bytes]) -> None:
    row = EvaluationRow(EvaluationSample("s", ["\ud800"]), "m", 2**70, Outcome.PASSED, 1.0)
    data = orjson.loads(encode(row))
    assert data["output"] == str(2**70)
    assert data["notes"]
