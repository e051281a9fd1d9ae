"""ToolCallsStrategy.bfcl() against bfcl-eval's own checker, on BFCL's Python categories.

For every entry of BFCL's simple (Python), multiple, parallel and parallel_multiple files,
calls are generated (correct, and mutated: wrong name, missing required, optional omitted,
wrong value, second acceptable value, case and punctuation, int for float, bool for int, an
extra argument, reordered parallel calls, a repeated tool with one wrong call, ...) and each
case is judged by bfcl-eval 2026.3.23's ``ast_checker`` and by aeval: the verdicts must be the
same on every case.

bfcl-eval is installed with ``--no-deps`` (``.ci/run`` does; its dependencies are the model
clients of every vendor). Its checker imports ``bfcl_eval.constants.model_config`` only to
read ``MODEL_CONFIG_MAPPING[model].underscore_to_dot``, and that module imports every model
handler: the tests give it a stand-in module holding two models, one with
``underscore_to_dot`` and one without, and run the checker's own code unchanged.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import aeval
from aeval import EvaluationSample
from aeval.strategies import ToolCallsStrategy
from aeval.trace import capture, record_tool_call

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
MODEL = "aeval-test"
DOTLESS_MODEL = "aeval-test-dotless"
EXCERPT = Path(__file__).parent / "data" / "bfcl"

Calls = list[dict[str, dict[str, Any]]]


def _reference() -> tuple[Callable[..., dict[str, Any]], Any, Path]:
    try:
        enums = importlib.import_module("bfcl_eval.constants.enums")
    except ImportError:
        pytest.skip(
            "bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23 "
            "(.ci/run installs it)"
        )
    name = "bfcl_eval.eval_checker.ast_eval.ast_checker"
    if name not in sys.modules:
        stand_in = types.ModuleType("bfcl_eval.constants.model_config")
        stand_in.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
            MODEL: types.SimpleNamespace(underscore_to_dot=False),
            DOTLESS_MODEL: types.SimpleNamespace(underscore_to_dot=True),
        }
        previous = sys.modules.get(stand_in.__name__)
        sys.modules[stand_in.__name__] = stand_in
        try:
            importlib.import_module(name)
        finally:
            if previous is None:
                del sys.modules[stand_in.__name__]
            else:
                sys.modules[stand_in.__name__] = previous
    checker = sys.modules[name].ast_checker
    data = Path(importlib.import_module("bfcl_eval").__file__ or "").parent / "data"
    return checker, enums.Language.PYTHON, data


def _first(answers: list[Any]) -> tuple[bool, Any]:
    for answer in answers:
        if answer != "":
            return True, _pick(answer, 0)
    return False, None


def _pick(answer: Any, index: int) -> Any:
    """A value a model could give for an acceptable answer (a dict's values are answers)."""
    if isinstance(answer, dict):
        picked = {}
        for key, options in answer.items():
            if isinstance(options, list):
                present = [option for option in options if option != ""]
                if present:
                    picked[key] = _pick(present[min(index, len(present) - 1)], 0)
            else:
                picked[key] = options
        return picked
    if isinstance(answer, list):
        return [_pick(item, index) for item in answer]
    return answer


def _correct(truth: list[dict[str, dict[str, list[Any]]]]) -> Calls:
    calls = []
    for call in truth:
        ((name, parameters),) = call.items()
        arguments = {}
        for key, answers in parameters.items():
            present, value = _first(answers)
            if present:
                arguments[key] = value
        calls.append({name: arguments})
    return calls


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + " zz"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["zz"]
    if isinstance(value, dict):
        return {**value, "zz": 1}
    return "zz"


def _shout(value: str) -> str:
    middle = len(value) // 2
    return (value[:middle] + "-" + value[middle:]).upper().replace(" ", " ,") + "."


def _mutations(entry: dict[str, Any], truth: list[dict[str, Any]]) -> Iterator[tuple[str, Calls]]:
    good = _correct(truth)
    yield "correct", good
    functions = {function["name"]: function for function in entry["function"]}

    for index in range(len(good)):
        ((name, arguments),) = good[index].items()
        ((_, answers),) = truth[index].items()
        schema = functions[name]["parameters"]
        properties = schema.get("properties", {})
        calls = copy.deepcopy(good)
        calls[index] = {name + "_x": arguments}
        yield f"wrong name {index}", calls
        for key in schema.get("required", []):
            if key in arguments:
                calls = copy.deepcopy(good)
                del calls[index][name][key]
                yield f"missing required {key} {index}", calls
                break
        optional = [key for key, options in answers.items() if "" in options and key in arguments]
        if optional:
            calls = copy.deepcopy(good)
            for key in optional:
                del calls[index][name][key]
            yield f"optional omitted {index}", calls
        for key, value in arguments.items():
            calls = copy.deepcopy(good)
            calls[index][name][key] = _wrong(value)
            yield f"wrong value {key} {index}", calls
            present = [option for option in answers[key] if option != ""]
            if len(present) > 1:
                calls = copy.deepcopy(good)
                calls[index][name][key] = _pick(present[1], 1)
                yield f"second value {key} {index}", calls
            if isinstance(value, str):
                calls = copy.deepcopy(good)
                calls[index][name][key] = _shout(value)
                yield f"case and punctuation {key} {index}", calls
                calls = copy.deepcopy(good)
                calls[index][name][key] = value + "!"
                yield f"unremoved punctuation {key} {index}", calls
            if isinstance(value, list) and any(isinstance(item, str) for item in value):
                calls = copy.deepcopy(good)
                calls[index][name][key] = [
                    item.upper() + "." if isinstance(item, str) else item for item in value
                ]
                yield f"case in list {key} {index}", calls
            if isinstance(value, dict) and any(isinstance(item, str) for item in value.values()):
                calls = copy.deepcopy(good)
                calls[index][name][key] = {
                    k: v.upper() + " " if isinstance(v, str) else v for k, v in value.items()
                }
                yield f"case in dict {key} {index}", calls
            if isinstance(value, float) and value == int(value):
                calls = copy.deepcopy(good)
                calls[index][name][key] = int(value)
                yield f"int for float {key} {index}", calls
            if isinstance(value, int) and not isinstance(value, bool):
                calls = copy.deepcopy(good)
                calls[index][name][key] = bool(value)
                yield f"bool for int {key} {index}", calls
                calls = copy.deepcopy(good)
                calls[index][name][key] = float(value)
                yield f"float for int {key} {index}", calls
            if isinstance(value, list) and value and all(type(x) is int for x in value):
                calls = copy.deepcopy(good)
                calls[index][name][key] = [float(x) for x in value]
                yield f"floats in an int list {key} {index}", calls
        calls = copy.deepcopy(good)
        calls[index][name]["aeval_extra"] = 1
        yield f"extra argument {index}", calls
        unlisted = [key for key in properties if key not in answers]
        if unlisted:
            calls = copy.deepcopy(good)
            calls[index][name][unlisted[0]] = "x"
            yield f"schema argument without answer {index}", calls
    if len(good) > 1:
        yield "reordered", list(reversed(good))
    names = [next(iter(call)) for call in good]
    for index, name in enumerate(names):
        first = names.index(name)
        if first != index:
            calls = copy.deepcopy(good)
            calls[index] = copy.deepcopy(good[first])
            yield f"repeated {name} with one wrong call", calls
            break
    yield "one call more", [*good, copy.deepcopy(good[0])]
    if len(good) > 1:
        yield "one call fewer", good[:-1]
    yield "no call", []


def _aeval_verdict(strategy: ToolCallsStrategy, sample: EvaluationSample, calls: Calls) -> bool:
    with capture():
        for call in calls:
            ((name, arguments),) = call.items()
            record_tool_call(name, arguments)
        return strategy.evaluate(sample, None).passed


def _dotless(calls: Calls) -> Calls:
    return [{next(iter(call)).replace(".", "_"): next(iter(call.values()))} for call in calls]


def _compare(data: Path, *, dotless: bool = False) -> tuple[int, int, list[str]]:
    checker, python, _ = _reference()
    strategy = ToolCallsStrategy.bfcl()
    cases = passed = 0
    disagreements: list[str] = []
    for category in CATEGORIES:
        questions = data / f"BFCL_v4_{category}.json"
        answers = (data / "possible_answer" / questions.name).read_text(encoding="utf-8")
        truths = {
            entry["id"]: entry["ground_truth"] for entry in map(json.loads, answers.splitlines())
        }
        samples = {s.name: s for s in aeval.load_bfcl(questions, underscore_to_dot=dotless)}
        for line in questions.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            truth = truths[entry["id"]]
            for label, calls in _mutations(entry, truth):
                given = _dotless(calls) if dotless else calls
                expected = checker(
                    entry["function"],
                    copy.deepcopy(given),
                    truth,
                    python,
                    category,
                    DOTLESS_MODEL if dotless else MODEL,
                )["valid"]
                actual = _aeval_verdict(strategy, samples[entry["id"]], given)
                cases += 1
                passed += expected
                if actual != expected:
                    disagreements.append(
                        f"{entry['id']} {label}: bfcl-eval {expected}, aeval {actual}: {given}"
                    )
    return cases, passed, disagreements


def test_bfcl_verdicts_on_the_vendored_excerpt() -> None:
    cases, passed, disagreements = _compare(EXCERPT)
    assert not disagreements, "\n".join(disagreements[:20])
    assert 0 < passed < cases


def test_bfcl_verdicts_on_every_python_entry() -> None:
    _, _, data = _reference()
    cases, passed, disagreements = _compare(data)
    print(f"bfcl-eval and aeval agree on {cases} cases ({passed} valid)")
    assert not disagreements, f"{len(disagreements)} of {cases}:\n" + "\n".join(disagreements[:20])
    assert cases > 10_000 and 0 < passed < cases


def test_bfcl_verdicts_with_underscore_to_dot_names() -> None:
    cases, _, disagreements = _compare(EXCERPT, dotless=True)
    assert not disagreements, "\n".join(disagreements[:20])
    assert cases > 0
