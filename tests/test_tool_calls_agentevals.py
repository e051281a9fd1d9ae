"""ToolCallsStrategy.trajectory() against agentevals' trajectory match (agentevals 0.0.9).

Generated trajectories (one tool call per assistant message, as agents mostly make them)
are judged by ``create_trajectory_match_evaluator`` and by aeval, for each trajectory mode,
each argument mode and each kind of per-tool override. aeval follows agentevals'
documentation where its code departs from it; the test computes the documented verdict
with agentevals itself and accepts a difference only when it is one of these:

- ``greedy``: agentevals gives each reference call the first output call that fits, so it
  can fail where a one-to-one assignment exists (one order of the same output calls passes);
  aeval finds the assignment.
- ``subset roles``: in ``subset`` mode agentevals calls the argument matcher with the
  reference's arguments first, so argument ``subset`` acts as ``superset`` and the reverse;
  aeval keeps the documented meaning (the output's arguments are a subset / superset of the
  reference's).
- ``unordered both ways``: ``unordered`` checks both directions with the same matcher, so
  argument ``subset`` or ``superset`` acts as ``exact``; aeval matches the calls one to one
  with the argument mode as documented.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from aeval import EvaluationSample
from aeval.strategies import ToolCallsStrategy
from aeval.trace import capture, record_tool_call

match = pytest.importorskip(
    "agentevals.trajectory.match",
    reason="agentevals is not installed: pip install agentevals==0.0.9 (the dev extra has it)",
)

Call = tuple[str, dict[str, Any]]

TOOLS = ("search", "lookup")
ARGUMENTS: tuple[dict[str, Any], ...] = (
    {},
    {"q": "a"},
    {"q": "b"},
    {"q": "A"},
    {"q": "a", "n": 1},
    {"q": "a", "n": 2},
    {"n": 1},
    {"n": True},
    {"n": 1.0},
    {"q": ["a", "b"]},
    {"q": {"x": 1}},
    {"q": {"x": 1, "y": 2}},
)
MODES = ("strict", "unordered", "subset", "superset")
ARGUMENT_MODES = ("exact", "ignore", "subset", "superset")
ASYMMETRIC = ("subset", "superset")


def _same_query(actual: dict[str, Any], expected: dict[str, Any]) -> bool:
    return str(actual.get("q", "")).lower() == str(expected.get("q", "")).lower()


OVERRIDES: dict[str, dict[str, Any] | None] = {
    "none": None,
    "mode": {"search": "ignore", "lookup": "superset"},
    "keys": {"search": ["q"], "lookup": ["q.x"]},
    "callable": {"search": _same_query},
}


def _messages(calls: list[Call]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "question"}]
    for index, (name, arguments) in enumerate(calls):
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call-{index}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "content": "result", "tool_call_id": f"call-{index}"})
    messages.append({"role": "assistant", "content": "answer"})
    return messages


def _agentevals(
    mode: str, arguments: str, overrides: dict[str, Any] | None, out: list[Call], ref: list[Call]
) -> bool:
    evaluator = match.create_trajectory_match_evaluator(
        trajectory_match_mode=mode,
        tool_args_match_mode=arguments,
        tool_args_match_overrides=overrides,
    )
    return bool(evaluator(outputs=_messages(out), reference_outputs=_messages(ref))["score"])


def _swapped(mode: str) -> str:
    return {"subset": "superset", "superset": "subset"}.get(mode, mode)


def _asymmetric(arguments: str, overrides: dict[str, Any] | None) -> bool:
    return arguments in ASYMMETRIC or any(
        isinstance(value, str) and value in ASYMMETRIC for value in (overrides or {}).values()
    )


def _documented(
    mode: str, arguments: str, overrides: dict[str, Any] | None, out: list[Call], ref: list[Call]
) -> tuple[bool, str | None]:
    """agentevals' verdict as its documentation describes it, and the exception applied."""
    if mode == "subset" and _asymmetric(arguments, overrides):
        swapped = {
            tool: _swapped(value) if isinstance(value, str) else value
            for tool, value in (overrides or {}).items()
        }
        return _agentevals(mode, _swapped(arguments), swapped or None, out, ref), "subset roles"
    if mode == "unordered" and _asymmetric(arguments, overrides):
        verdict = len(out) == len(ref) and _agentevals("superset", arguments, overrides, out, ref)
        return verdict, "unordered both ways"
    return _agentevals(mode, arguments, overrides, out, ref), None


def _closure(
    verdict: Callable[[list[Call]], tuple[bool, str | None]], mode: str, out: list[Call]
) -> tuple[bool, bool]:
    """(the verdict on some order of the output calls, whether only a reorder gave it)."""
    if mode == "strict":
        return verdict(out)[0], False
    for order in itertools.permutations(out):
        if verdict(list(order))[0]:
            return True, True
    return False, False


def _aeval(
    mode: str, arguments: str, overrides: dict[str, Any] | None, out: list[Call], ref: list[Call]
) -> bool:
    strategy = ToolCallsStrategy.trajectory(
        mode,  # type: ignore[arg-type]
        arguments=arguments,  # type: ignore[arg-type]
        tool_arguments=overrides,
    )
    expected = [{"name": name, "arguments": arguments} for name, arguments in ref]
    sample = EvaluationSample("case", [], None, metadata={"expected_calls": expected})
    with capture():
        for name, given in out:
            record_tool_call(name, given)
        return strategy.evaluate(sample, None).passed


def _trajectories(rng: random.Random) -> tuple[list[Call], list[Call]]:
    def call() -> Call:
        return rng.choice(TOOLS), dict(rng.choice(ARGUMENTS))

    ref = [call() for _ in range(rng.randint(0, 3))]
    out = list(ref)
    kind = rng.randrange(7)
    if kind == 1:
        rng.shuffle(out)
    elif kind == 2 and out:
        out.pop(rng.randrange(len(out)))
    elif kind == 3:
        out.insert(rng.randint(0, len(out)), call())
    elif kind == 4 and out:
        index = rng.randrange(len(out))
        out[index] = (out[index][0], dict(rng.choice(ARGUMENTS)))
    elif kind == 5 and out:
        out.insert(rng.randint(0, len(out)), out[rng.randrange(len(out))])
        rng.shuffle(out)
    elif kind == 6:
        out = [call() for _ in range(rng.randint(0, 4))]
    return out, ref


@pytest.mark.parametrize("overrides", list(OVERRIDES))
@pytest.mark.parametrize("arguments", ARGUMENT_MODES)
@pytest.mark.parametrize("mode", MODES)
def test_trajectory_match_agrees_with_agentevals(mode: str, arguments: str, overrides: str) -> None:
    rng = random.Random(f"{mode}-{arguments}-{overrides}")
    given = OVERRIDES[overrides]
    counts: Counter[str] = Counter()
    disagreements = []
    for _ in range(150):
        out, ref = _trajectories(rng)
        ours = _aeval(mode, arguments, given, out, ref)
        raw = _agentevals(mode, arguments, given, out, ref)
        if ours == raw:
            counts["identical"] += 1
            continue
        documented, exception = _documented(mode, arguments, given, out, ref)
        if ours == documented and exception is not None:
            counts[exception] += 1
            continue

        def documented_on(order: list[Call], ref: list[Call] = ref) -> tuple[bool, str | None]:
            return _documented(mode, arguments, given, order, ref)

        closed, reordered = _closure(documented_on, mode, out)
        if ours == closed and reordered:
            counts["greedy"] += 1
        else:
            disagreements.append(f"out={out} ref={ref}: agentevals {raw}, aeval {ours}")
    print(f"agentevals {mode}/{arguments}/{overrides}: {dict(counts)}")
    assert not disagreements, "\n".join(disagreements[:10])
    assert counts["identical"] > 100, counts


def test_the_documented_exceptions_occur_and_are_the_only_ones() -> None:
    """One case of each exception, stated in full."""
    superset_arguments: list[Call] = [("search", {"q": "a", "n": 1})]
    reference: list[Call] = [("search", {"q": "a"})]
    # subset roles: the output's arguments are a superset of the reference's
    assert _aeval("subset", "superset", None, superset_arguments, reference)
    assert not _agentevals("subset", "superset", None, superset_arguments, reference)
    # unordered both ways: the same, in unordered mode
    assert _aeval("unordered", "superset", None, superset_arguments, reference)
    assert not _agentevals("unordered", "superset", None, superset_arguments, reference)
    # greedy: the first reference call takes the output call the second one needed
    out: list[Call] = [("search", {"q": "a", "n": 1}), ("search", {"q": "a"})]
    ref: list[Call] = [("search", {"q": "a"}), ("search", {"q": "a", "n": 1})]
    assert _aeval("superset", "superset", None, out, ref)
    assert not _agentevals("superset", "superset", None, out, ref)
    assert _agentevals("superset", "superset", None, list(reversed(out)), ref)
