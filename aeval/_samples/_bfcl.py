"""Samples from the Berkeley Function Calling Leaderboard's data (its AST categories).

A BFCL question file holds one JSON object a line (``id``, ``question``: the turns of
messages, ``function``: the schemas offered); its possible-answer file (``possible_answer/``
beside it, same file name) holds ``ground_truth``: per expected call, each parameter's list of
acceptable values, ``""`` among them meaning "may be absent". Each question becomes a sample
with ``functions`` and ``expected-calls`` (each list of acceptable values an ``any-of`` rule),
which :meth:`ToolCallsStrategy.bfcl() <aeval.strategies.ToolCallsStrategy.bfcl>` checks as
bfcl-eval's checker does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import SampleFileNotFoundError, SampleLoadError
from ..trace._keys import EXPECTED_CALLS, EXPECTED_CALLS_ORDER, FUNCTIONS
from ._expected_calls import ANY_OF, OPTIONAL, compile_calls, compile_functions
from ._model import EvaluationSample, Samples

__all__ = ["load_bfcl"]

_OPTIONAL_MARK = ""


def _rule(answers: list[Any]) -> dict[str, Any]:
    options = [_answer(answer) for answer in answers if answer != _OPTIONAL_MARK]
    rule: dict[str, Any] = {ANY_OF: options}
    if _OPTIONAL_MARK in answers:
        rule[OPTIONAL] = True
    return rule


def _answer(value: Any) -> Any:
    """One acceptable value; inside it, a mapping's values are again lists of answers."""
    if isinstance(value, Mapping):
        return {key: _rule(item) if isinstance(item, list) else item for key, item in value.items()}
    if isinstance(value, list):
        return [_answer(item) for item in value]
    return value


def _dotless(name: str, underscore_to_dot: bool) -> str:
    return name.replace(".", "_") if underscore_to_dot else name


def _read_lines(path: Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SampleFileNotFoundError(
            f"BFCL {what} file not found (a question file such as "
            "BFCL_v4_simple_python.json has its answers in possible_answer/ beside it)",
            source=str(path),
        ) from None
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SampleLoadError(
                f"not JSON ({exc.msg}): a BFCL file has one JSON object a line",
                source=str(path),
                line=number,
            ) from None
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise SampleLoadError(
                "each line of a BFCL file is an object with an 'id'", source=str(path), line=number
            )
        entries.append((number, entry))
    return entries


def _calls(truth: Any, underscore_to_dot: bool) -> list[dict[str, Any]]:
    if not isinstance(truth, list):
        raise ValueError("'ground_truth' must be a list of {function: {parameter: [answers]}}")
    calls = []
    for call in truth:
        if not isinstance(call, Mapping) or len(call) != 1:
            raise ValueError("each 'ground_truth' call is {function: {parameter: [answers]}}")
        ((name, parameters),) = call.items()
        if not isinstance(parameters, Mapping) or not all(
            isinstance(answers, list) for answers in parameters.values()
        ):
            raise ValueError(f"the parameters of {name!r} must each list their answers")
        arguments = {key: _rule(answers) for key, answers in parameters.items()}
        calls.append({"name": _dotless(name, underscore_to_dot), "arguments": arguments})
    return calls


def load_bfcl(
    questions: str | os.PathLike[str],
    answers: str | os.PathLike[str] | None = None,
    *,
    underscore_to_dot: bool = False,
) -> Samples:
    """The samples of a BFCL question file and its possible-answer file.

    Each sample is named by the question's id, tagged with its category, has the parameters
    ``messages`` (its one turn) and ``functions`` (the schemas to offer the model), and
    carries ``functions`` and ``expected-calls`` (in any order). Score a model's decoded calls with
    :meth:`ToolCallsStrategy.bfcl() <aeval.strategies.ToolCallsStrategy.bfcl>`.

    Args:
        questions: A question file (``BFCL_v4_simple_python.json``, ``..._multiple.json``,
            ``..._parallel.json``, ``..._parallel_multiple.json``, and the live ones).
        answers: Its possible-answer file; by default ``possible_answer/`` beside it, same
            name.
        underscore_to_dot: Name the functions with ``_`` for ``.`` (``math.factorial``
            becomes ``math_factorial``), as bfcl-eval does for models whose function names
            cannot hold a dot (its ``underscore_to_dot``).

    Raises:
        SampleFileNotFoundError: A file does not exist.
        SampleLoadError: A line is not a BFCL entry, or a question has no answer (the
            categories without possible answers, irrelevance and multi-turn, are not AST
            checks).
    """
    question_path = Path(questions)
    answer_path = (
        question_path.parent / "possible_answer" / question_path.name
        if answers is None
        else Path(answers)
    )
    truths = {entry["id"]: entry for _, entry in _read_lines(answer_path, "possible-answer")}
    samples = []
    for number, entry in _read_lines(question_path, "question"):
        ident = entry["id"]

        def fail(reason: str, ident: str = ident, number: int = number) -> SampleLoadError:
            return SampleLoadError(reason, source=str(question_path), line=number, sample=ident)

        truth = truths.get(ident)
        if truth is None:
            raise fail(f"no possible answer with this id in {answer_path}")
        turns = entry.get("question")
        if not isinstance(turns, list) or len(turns) != 1 or not isinstance(turns[0], list):
            raise fail("'question' must hold one turn of messages (multi-turn is not supported)")
        functions = entry.get("function")
        if not isinstance(functions, list):
            raise fail("'function' must be a list of function schemas")
        functions = [
            {**function, "name": _dotless(function["name"], underscore_to_dot)}
            if isinstance(function, Mapping) and isinstance(function.get("name"), str)
            else function
            for function in functions
        ]
        try:
            calls = _calls(truth.get("ground_truth"), underscore_to_dot)
            compile_calls(calls)
            compile_functions(functions)
        except ValueError as exc:
            raise fail(str(exc)) from None
        category = ident.rsplit("_", 1)[0]
        samples.append(
            EvaluationSample(
                ident,
                {"messages": turns[0], "functions": functions},
                None,
                tags=[category],
                metadata={
                    FUNCTIONS: functions,
                    EXPECTED_CALLS: calls,
                    EXPECTED_CALLS_ORDER: "any",
                    "bfcl_category": category,
                },
            )
        )
    return Samples(samples)
