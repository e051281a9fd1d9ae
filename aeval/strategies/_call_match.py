"""Matching expected calls to actual calls: each pair's differences, then the assignment.

A pair is compared by name, then against the function's schema (when the sample states
``functions``), then argument by argument under the argument mode. The assignment is one
expected call to one actual call: ``"optimal"`` finds a largest one (Kuhn's augmenting paths
for any order, a longest increasing chain of pairs for in-order), ``"greedy"`` gives each expected
call, in order, the first free actual call that matches (bfcl-eval's and agentevals' way,
which can miss an assignment that exists). Only pairs of the same tool are compared, and at
most :data:`MAX_PAIRS` of them, so a check stays cheap enough to run on the event loop.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._samples._expected_calls import ExpectedCall, Function, Rule
from ..trace import ToolCall
from ..trace._fixtures import show_call
from ._call_values import bfcl_problem, compact, mapping_problem, show_expected, value_problem
from ._text_common import show_value

__all__ = ["MAX_PAIRS", "ArgumentMatcher", "CallRules", "Matching", "match_calls"]

MAX_PAIRS = 20_000
"""The most (expected, actual) pairs of the same tool one check compares."""

ArgumentMatcher = Callable[[dict[str, Any], dict[str, Any]], bool]
"""A per-tool argument check: ``matcher(actual_arguments, expected_arguments) -> bool``."""


@dataclass(frozen=True, slots=True)
class CallRules:
    """How a pair of calls is compared (see ``ToolCallsStrategy``)."""

    arguments: str = "exact"
    tool_arguments: Mapping[str, str | tuple[str, ...] | ArgumentMatcher] = field(
        default_factory=dict
    )
    strings: str = "exact"
    types: str = "strict"


@dataclass(frozen=True, slots=True)
class Matching:
    """The outcome: the pairs (expected index, actual index), and what is left unmatched."""

    passed: bool
    pairs: tuple[tuple[int, int], ...]
    unmatched: tuple[int, ...]
    unexpected: tuple[int, ...]
    score: float
    explanation: str


def _path_value(arguments: Any, path: str) -> Any:
    current = arguments
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
        if current is None:
            return None
    return current


def _keys_problem(
    expected: Mapping[str, Any], actual: Mapping[str, Any], keys: Sequence[str], rules: CallRules
) -> str | None:
    for key in keys:
        want, got = _path_value(expected, key), _path_value(actual, key)
        if want is None or got is None:
            if got is None and (want is None or (isinstance(want, Rule) and want.optional)):
                continue
            shown = "absent" if got is None else show_value(got)
            wanted = "absent" if want is None else show_expected(want)
            return f"{key!r} is {shown}, expected {wanted}"
        problem = value_problem(want, got, strings=rules.strings, types=rules.types)
        if problem is not None:
            return f"{key!r} {problem}"
    return None


def _schema_problem(function: Function, actual: Mapping[str, Any]) -> str | None:
    for name in function.required:
        if name not in actual:
            return f"the required {name!r} is missing"
    for name in actual:
        if name not in function.properties:
            return f"{name!r} is not a parameter of {function.name!r}"
    return None


def _bfcl_arguments_problem(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    function: Function,
    mode: str,
    rules: CallRules,
) -> str | None:
    for name, value in actual.items():
        if name not in expected:
            if mode in ("exact", "subset"):
                return f"{name!r} was not expected (it is {show_value(value)})"
            continue
        problem = bfcl_problem(
            expected[name], value, function.properties.get(name, {}), strings=rules.strings
        )
        if problem is not None:
            return f"{name!r} {problem}"
    if mode in ("exact", "superset"):
        for name, want in expected.items():
            if name not in actual and not (isinstance(want, Rule) and want.optional):
                return f"{name!r} is missing (expected {show_expected(want)})"
    return None


def pair_problem(
    expected: ExpectedCall,
    actual: ToolCall,
    functions: Mapping[str, Function] | None,
    rules: CallRules,
) -> str | None:
    """Why ``actual`` does not match ``expected``, or ``None`` when it does."""
    if actual.name != expected.name:
        return f"it calls {actual.name!r}, not {expected.name!r}"
    arguments = actual.arguments
    function = None if functions is None else functions.get(expected.name)
    if function is not None:
        problem = _schema_problem(function, arguments)
        if problem is not None:
            return problem
    if expected.arguments is None:
        return None
    mode = rules.tool_arguments.get(expected.name, rules.arguments)
    if callable(mode):
        written = dict(expected.written or {})
        if mode(dict(arguments), written):
            return None
        return f"its arguments fail the check given for {expected.name!r}"
    if isinstance(mode, tuple):
        return _keys_problem(expected.arguments, arguments, mode, rules)
    if mode == "ignore":
        return None
    if rules.types == "bfcl" and function is not None:
        return _bfcl_arguments_problem(expected.arguments, arguments, function, mode, rules)
    types = "strict" if rules.types == "bfcl" else rules.types
    return mapping_problem(
        expected.arguments,
        arguments,
        strings=rules.strings,
        types=types,
        extra="allow" if mode == "superset" else "fail",
        missing="allow" if mode == "subset" else "fail",
    )


def _any_order(candidates: list[list[int]], greedy: bool) -> dict[int, int]:
    owner: dict[int, int] = {}  # actual -> expected
    if greedy:
        for expected, options in enumerate(candidates):
            for actual in options:
                if actual not in owner:
                    owner[actual] = expected
                    break
        return {expected: actual for actual, expected in owner.items()}

    def augment(expected: int, seen: set[int]) -> bool:
        for actual in candidates[expected]:
            if actual in seen:
                continue
            seen.add(actual)
            if actual not in owner or augment(owner[actual], seen):
                owner[actual] = expected
                return True
        return False

    for expected in range(len(candidates)):
        augment(expected, set())
    return {expected: actual for actual, expected in owner.items()}


def _in_order(candidates: list[list[int]], greedy: bool) -> dict[int, int]:
    if greedy:
        pairs, after = {}, -1
        for expected, options in enumerate(candidates):
            later = [actual for actual in options if actual > after]
            if later:
                pairs[expected] = after = later[0]
        return pairs
    # the longest chain of pairs increasing on both sides: a longest increasing subsequence
    # of the actual positions, the pairs taken by expected call and, within one, backwards
    chain = [(e, a) for e, options in enumerate(candidates) for a in sorted(options, reverse=True)]
    tails: list[int] = []  # tails[k]: the index in chain ending the best chain of length k+1
    ends: list[int] = []  # the actual position each of them ends on
    before: list[int] = [-1] * len(chain)
    for index, (_, actual) in enumerate(chain):
        length = bisect_left(ends, actual)
        before[index] = tails[length - 1] if length else -1
        if length == len(tails):
            tails.append(index)
            ends.append(actual)
        else:
            tails[length] = index
            ends[length] = actual
    pairs = {}
    index = tails[-1] if tails else -1
    while index >= 0:
        expected, actual = chain[index]
        pairs[expected] = actual
        index = before[index]
    return pairs


def _label(index: int, call: ToolCall) -> str:
    return f"call {index + 1}, {show_call(call.name, call.arguments)}"


def _shown(expected: ExpectedCall) -> str:
    if expected.arguments is None:
        return f"{expected.name}(...)"
    shown = ", ".join(f"{key}={compact(value)}" for key, value in expected.arguments.items())
    return f"{expected.name}({shown})"


def match_calls(
    expected: Sequence[ExpectedCall],
    actual: Sequence[ToolCall],
    *,
    functions: Mapping[str, Function] | None,
    rules: CallRules,
    order: str,
    matching: str,
    extra_calls: str,
    missing_calls: str,
) -> Matching:
    """Match ``expected`` to ``actual`` one to one and explain what is left over."""
    by_name: dict[str, list[int]] = {}
    for a, call in enumerate(actual):
        by_name.setdefault(call.name, []).append(a)
    same = [by_name.get(want.name, []) for want in expected]
    if sum(len(options) for options in same) > MAX_PAIRS:
        return Matching(
            False,
            (),
            tuple(range(len(expected))),
            tuple(range(len(actual))),
            0.0,
            f"Too many calls to compare: {len(expected)} expected and {len(actual)} made "
            f"give more than {MAX_PAIRS} pairs of the same tool",
        )
    problems: dict[tuple[int, int], str | None] = {}
    for e, options in enumerate(same):
        for a in options:
            problems[e, a] = pair_problem(expected[e], actual[a], functions, rules)
    candidates = [[a for a in options if problems[e, a] is None] for e, options in enumerate(same)]
    greedy = matching == "greedy"
    if order == "exact":
        pairs = {e: e for e in range(min(len(expected), len(actual))) if e in candidates[e]}
    elif order == "in-order":
        pairs = _in_order(candidates, greedy)
    else:
        pairs = _any_order(candidates, greedy)
    taken = set(pairs.values())
    unmatched = tuple(e for e in range(len(expected)) if e not in pairs)
    unexpected = tuple(a for a in range(len(actual)) if a not in taken)
    passed = (missing_calls == "allow" or not unmatched) and (
        extra_calls == "allow" or not unexpected
    )
    sides = (len(expected) if missing_calls == "fail" else 0) + (
        len(actual) if extra_calls == "fail" else 0
    )
    counted = (len(pairs) if missing_calls == "fail" else 0) + (
        len(pairs) if extra_calls == "fail" else 0
    )
    score = 1.0 if passed else (counted / sides if sides else 0.0)
    owner = {a: e for e, a in pairs.items()}
    reasons: list[str] = []
    told: set[tuple[int, int]] = set()
    if missing_calls == "fail":
        for e in unmatched:
            reason, closest = _unmatched_reason(e, expected, actual, same, problems, owner, order)
            reasons.append(reason)
            if closest is not None:
                told.add((e, closest))
    if extra_calls == "fail":
        for a in unexpected:
            extra = _unexpected_reason(a, expected, actual, problems, pairs, told)
            if extra is not None:
                reasons.append(extra)
    if passed:
        text = _passed_text(expected, actual, pairs)
    else:
        text = "; ".join(reasons) if reasons else "The calls do not match"
        text = text[:1].upper() + text[1:]
    return Matching(passed, tuple(sorted(pairs.items())), unmatched, unexpected, score, text)


def _passed_text(
    expected: Sequence[ExpectedCall], actual: Sequence[ToolCall], pairs: Mapping[int, int]
) -> str:
    if not expected and not actual:
        return "No tool was called, as expected"
    shown = ", ".join(_shown(expected[e]) for e in sorted(pairs))
    extra = len(actual) - len(pairs)
    more = f" ({extra} other {'call' if extra == 1 else 'calls'} allowed)" if extra else ""
    if not pairs:
        return f"Nothing was required{more}"
    return f"Matched {shown}{more}"


def _unmatched_reason(
    e: int,
    expected: Sequence[ExpectedCall],
    actual: Sequence[ToolCall],
    same: Sequence[Sequence[int]],
    problems: Mapping[tuple[int, int], str | None],
    owner: Mapping[int, int],
    order: str,
) -> tuple[str, int | None]:
    head = f"expected call {e + 1}, {_shown(expected[e])}, was not matched"
    if not actual:
        return f"{head}: no tool was called", None
    options = list(same[e])
    if not options:
        names = ", ".join(dict.fromkeys(call.name for call in actual))
        return f"{head}: {expected[e].name!r} was not called (called {names})", None
    free = [a for a in options if a not in owner] or options
    fitting = [a for a in free if problems[e, a] is None]
    if fitting:
        a = fitting[0]
        if a in owner:
            return (
                f"{head}: {_label(a, actual[a])}, fits it but matches expected call {owner[a] + 1}",
                None,
            )
        where = "position" if order == "exact" else "order"
        return f"{head}: {_label(a, actual[a])}, fits it but is out of {where}", a
    a = free[0]
    return f"{head}: the closest, {_label(a, actual[a])}, differs: {problems[e, a]}", a


def _unexpected_reason(
    a: int,
    expected: Sequence[ExpectedCall],
    actual: Sequence[ToolCall],
    problems: Mapping[tuple[int, int], str | None],
    pairs: Mapping[int, int],
    told: set[tuple[int, int]],
) -> str | None:
    head = f"{_label(a, actual[a])}, was not expected"
    if not expected:
        return f"{head}: the sample expects no tool call"
    options = [e for e in range(len(expected)) if (e, a) in problems]
    if not options:
        return f"{head}: no call of {actual[a].name!r} was expected"
    free = [e for e in options if e not in pairs] or options
    e = free[0]
    if (e, a) in told:
        return None
    problem = problems[e, a]
    if problem is None:
        if e in pairs:
            return (
                f"{head}: expected call {e + 1}, {_shown(expected[e])}, is already matched by "
                f"call {pairs[e] + 1}"
            )
        return f"{head}: it fits expected call {e + 1}, {_shown(expected[e])}, but out of order"
    return f"{head}: the closest expected call, {_shown(expected[e])}, differs: {problem}"
