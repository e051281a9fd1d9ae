"""Agent strategies: checks on what the agent did (its trace), not on the text it returned.

Each reads the trace of the sample being evaluated (:func:`aeval.trace.current`) and, when
built without an expectation, the sample's own (``expected-tools``, ``forbidden-tools``,
``expected-tool-arguments``, ``expected-calls`` and ``functions`` in a sample file). They are
pure and cheap, so they run inline on the event loop like the text checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .._reporting._results import EvaluationResult
from .._samples._expected_calls import compile_calls, compile_functions, read_order
from ..trace import ToolCall, Trace, current
from ..trace._fixtures import show_call
from ..trace._keys import (
    EXPECTED_CALLS,
    EXPECTED_CALLS_ORDER,
    EXPECTED_TOOL_ARGUMENTS,
    EXPECTED_TOOLS,
    FORBIDDEN_TOOLS,
    FUNCTIONS,
)
from ._base import NamedStrategy
from ._call_match import ArgumentMatcher, CallRules, match_calls
from ._text_common import check_choice, plural, show_values

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "BudgetStrategy",
    "ToolArgumentsStrategy",
    "ToolCalledStrategy",
    "ToolCallsStrategy",
    "ToolPolicyStrategy",
    "ToolSequenceStrategy",
    "lcs_length",
    "sequence_f1",
]

_NO_TRACE = (
    "No trace was recorded for sample {name!r}, so there is nothing to check: run it under a "
    "Scorer (each sample is traced) or inside `with aeval.trace.capture():`, and record the "
    "tools with @aeval.tool (or aeval.trace.record_tool_call)"
)


def _names(value: str | Iterable[str], option: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    elif not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
        raise TypeError(f"{option} must be a tool name or a list of tool names, got {value!r}")
    names = tuple(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"{option} must hold non-empty tool names, got {name!r}")
    return names


def _count(value: object, option: str, *, allow_none: bool = True) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{option} must be an integer of at least 0, got {value!r}")
    return value


def lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """The length of the longest common subsequence of two sequences."""
    if len(first) < len(second):
        first, second = second, first
    row = [0] * (len(second) + 1)
    for item in first:
        diagonal = 0
        for index, other in enumerate(second, start=1):
            above = row[index]
            row[index] = diagonal + 1 if item == other else max(row[index], row[index - 1])
            diagonal = above
    return row[-1]


def sequence_f1(expected: Sequence[str], actual: Sequence[str], order: str) -> float:
    """How well ``actual`` matches ``expected``, in [0, 1].

    ``"exact"``: 1 when equal, else 0. ``"in_order"``: the F1 of the longest common
    subsequence. ``"any_order"``: the F1 of the multiset intersection (retries and duplicates
    count once per expected occurrence).
    """
    if not expected and not actual:
        return 1.0
    if order == "exact":
        return 1.0 if tuple(expected) == tuple(actual) else 0.0
    if order == "in_order":
        common = lcs_length(expected, actual)
    else:
        common = sum((Counter(expected) & Counter(actual)).values())
    return 2 * common / (len(expected) + len(actual))


class _AgentStrategy(NamedStrategy):
    __slots__ = ()
    _runs_inline: ClassVar[bool] = True

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Judge the trace of ``sample``'s run; see the class documentation."""
        trace = current()
        if trace is None:
            return EvaluationResult(
                False, 0.0, _NO_TRACE.format(name=sample.name), {"trace": "missing"}
            )
        return self._check(sample, trace)

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        raise NotImplementedError


def not_stated(sample: EvaluationSample, key: str, add: str) -> EvaluationResult:
    """The not-applicable result of a check whose expectation ``key`` the sample lacks;
    ``add`` says how to state it."""
    return EvaluationResult.not_applicable(
        f"Sample {sample.name!r} states no {key}, so this check does not apply to it "
        f"(to check it, {add})"
    )


def _missing(sample: EvaluationSample, key: str, option: str) -> EvaluationResult:
    shape = "{...}" if key == "expected-tool-arguments" else "[...]"
    return not_stated(sample, key, f"add {key}: {shape} to it, or pass {option}=")


def _called(trace: Trace) -> str:
    names = trace.tool_names()
    return f"called {show_values(names)}" if names else "called no tool"


class ToolCalledStrategy(_AgentStrategy):
    """Passes when a tool was called between ``min_calls`` and ``max_calls`` times.

    Args:
        name: The tool; ``None`` checks every tool of the sample's ``expected-tools``.
        min_calls: The fewest calls allowed.
        max_calls: The most calls allowed; ``None`` for no limit.
        strategy_name: The name of the report rows.

    Raises:
        ValueError: Negative counts, or ``max_calls`` below ``min_calls``.
    """

    __slots__ = ("_max", "_min", "_tool")

    def __init__(
        self,
        name: str | None = None,
        *,
        min_calls: int = 1,
        max_calls: int | None = None,
        strategy_name: str | None = None,
    ) -> None:
        super().__init__(name=strategy_name)
        self._tool = None if name is None else _names(name, "name")[0]
        self._min = _count(min_calls, "min_calls", allow_none=False) or 0
        self._max = _count(max_calls, "max_calls")
        if self._max is not None and self._max < self._min:
            raise ValueError(f"max_calls ({self._max}) must not be below min_calls ({self._min})")

    def _config(self) -> dict[str, Any]:
        return {"name": self._tool, "min_calls": self._min, "max_calls": self._max}

    def _bounds(self) -> str:
        if self._max is None:
            return f"at least {plural(self._min, 'time')}"
        if self._max == self._min:
            return f"exactly {plural(self._min, 'time')}"
        return f"{self._min} to {self._max} times"

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        if self._tool is not None:
            tools: tuple[str, ...] = (self._tool,)
        else:
            own = sample.metadata.get(EXPECTED_TOOLS)
            if own is None:
                return _missing(sample, "expected-tools", "name")
            tools = tuple(dict.fromkeys(_names(own, EXPECTED_TOOLS)))
        counts = Counter(trace.tool_names())
        wrong = [
            name
            for name in tools
            if counts[name] < self._min or (self._max is not None and counts[name] > self._max)
        ]
        metadata = {"calls": {name: counts[name] for name in tools}}
        score = 1.0 - len(wrong) / len(tools) if tools else 1.0
        if wrong:
            seen = ", ".join(f"{name!r} {plural(counts[name], 'time')}" for name in wrong)
            return EvaluationResult(
                False,
                score,
                f"Expected {show_values(wrong)} to be called {self._bounds()}; called {seen}",
                metadata,
            )
        shown = ", ".join(f"{name!r} {plural(counts[name], 'time')}" for name in tools)
        return EvaluationResult(True, score, f"Called {shown}", metadata)


class ToolPolicyStrategy(_AgentStrategy):
    """Passes when every tool called is allowed and none is denied.

    Args:
        allow: The only tools that may be called; ``None`` allows any.
        deny: Tools that must not be called. When neither is given, the sample's
            ``forbidden-tools`` are denied (nothing to check without them).
        name: The name of the report rows.
    """

    __slots__ = ("_allow", "_deny")

    def __init__(
        self,
        *,
        allow: str | Iterable[str] | None = None,
        deny: str | Iterable[str] = (),
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._allow = None if allow is None else frozenset(_names(allow, "allow"))
        self._deny = frozenset(_names(deny, "deny"))

    def _config(self) -> dict[str, Any]:
        return {
            "allow": None if self._allow is None else sorted(self._allow),
            "deny": sorted(self._deny),
        }

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        deny = self._deny
        if self._allow is None and not deny:
            own = sample.metadata.get(FORBIDDEN_TOOLS)
            if own is None:
                return EvaluationResult(
                    True,
                    1.0,
                    f"Nothing to check: no tool is denied (give sample {sample.name!r} "
                    "forbidden-tools, or pass allow= / deny=)",
                )
            deny = frozenset(_names(own, FORBIDDEN_TOOLS))
        names = trace.tool_names()
        denied = [name for name in dict.fromkeys(names) if name in deny]
        unlisted = [
            name
            for name in dict.fromkeys(names)
            if self._allow is not None and name not in self._allow and name not in deny
        ]
        bad = sum(1 for name in names if name in denied or name in unlisted)
        metadata = {"denied": denied, "not_allowed": unlisted}
        score = 1.0 - bad / len(names) if names else 1.0
        problems = []
        if denied:
            problems.append(f"called denied {plural(len(denied), 'tool')}: {show_values(denied)}")
        if unlisted:
            problems.append(
                f"called {plural(len(unlisted), 'tool')} not allowed: {show_values(unlisted)} "
                f"(allowed: {show_values(sorted(self._allow or ()))})"
            )
        if problems:
            text = "; ".join(problems)
            return EvaluationResult(False, score, text[:1].upper() + text[1:], metadata)
        return EvaluationResult(True, 1.0, f"Every call was allowed ({_called(trace)})", metadata)


class ToolSequenceStrategy(_AgentStrategy):
    """Compares the tools called, in order, with the expected sequence.

    ``order="exact"`` scores 1 for the same sequence, else 0; ``"in_order"`` scores the F1 of
    the longest common subsequence (other calls may come between); ``"any_order"`` the F1
    of the multiset of tools (never above 1, however many retries or duplicates).

    Args:
        expected: The tools in order; ``None`` reads the sample's ``expected-tools``.
        order: ``"exact"``, ``"in_order"`` or ``"any_order"``.
        threshold: The score from which the row passes.
        name: The name of the report rows.
    """

    __slots__ = ("_expected", "_order", "_threshold")

    def __init__(
        self,
        expected: Iterable[str] | None = None,
        *,
        order: Literal["exact", "in_order", "any_order"] = "in_order",
        threshold: float = 1.0,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._expected = None if expected is None else _names(expected, "expected")
        self._order = check_choice(order, "order", ("exact", "in_order", "any_order"))
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise TypeError(f"threshold must be a number from 0 to 1, got {threshold!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be from 0 to 1, got {threshold!r}")
        self._threshold = float(threshold)

    def _config(self) -> dict[str, Any]:
        return {"expected": self._expected, "order": self._order, "threshold": self._threshold}

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        expected = self._expected
        if expected is None:
            own = sample.metadata.get(EXPECTED_TOOLS)
            if own is None:
                return _missing(sample, "expected-tools", "expected")
            expected = _names(own, EXPECTED_TOOLS)
        actual = trace.tool_names()
        score = sequence_f1(expected, actual, self._order)
        passed = score >= self._threshold
        metadata = {"expected": list(expected), "actual": list(actual), "order": self._order}
        how = {"exact": "exactly", "in_order": "in order", "any_order": "in any order"}[self._order]
        verdict = "match" if score == 1.0 else f"score {score:.2f} against"
        return EvaluationResult(
            passed,
            score,
            f"The calls {list(actual)!r} {verdict} the expected {list(expected)!r} ({how})",
            metadata,
        )


def _mismatch(expected: Mapping[str, Any], call: ToolCall, exact: bool) -> list[str]:
    problems = []
    for key, value in expected.items():
        if key not in call.arguments:
            problems.append(f"{key!r} is missing (expected {value!r})")
        elif call.arguments[key] != value:
            problems.append(f"{key!r} is {call.arguments[key]!r}, expected {value!r}")
    if exact:
        problems += [f"{key!r} was not expected" for key in call.arguments if key not in expected]
    return problems


class ToolArgumentsStrategy(_AgentStrategy):
    """Passes when some call of a tool had the expected arguments.

    Args:
        name: The tool; ``None`` checks every tool of the sample's
            ``expected-tool-arguments``.
        expected: The arguments; ``None`` reads the sample's
            ``expected-tool-arguments`` for the tool.
        match: ``"subset"`` (the call may have more arguments) or ``"exact"``.
        strategy_name: The name of the report rows.
    """

    __slots__ = ("_expected", "_match", "_tool")

    def __init__(
        self,
        name: str | None = None,
        expected: Mapping[str, Any] | None = None,
        *,
        match: Literal["subset", "exact"] = "subset",
        strategy_name: str | None = None,
    ) -> None:
        super().__init__(name=strategy_name)
        if expected is not None and name is None:
            raise ValueError("ToolArgumentsStrategy: name the tool whose arguments are expected")
        if expected is not None and not isinstance(expected, Mapping):
            raise TypeError(f"expected must be a mapping of argument names, got {expected!r}")
        self._tool = None if name is None else _names(name, "name")[0]
        self._expected = None if expected is None else dict(expected)
        self._match = check_choice(match, "match", ("subset", "exact"))

    def _config(self) -> dict[str, Any]:
        return {"name": self._tool, "expected": self._expected, "match": self._match}

    def _expectations(self, sample: EvaluationSample) -> dict[str, Mapping[str, Any]] | None:
        if self._tool is not None and self._expected is not None:
            return {self._tool: self._expected}
        own = sample.metadata.get(EXPECTED_TOOL_ARGUMENTS)
        if not isinstance(own, Mapping):
            return None
        if self._tool is not None:
            wanted = own.get(self._tool)
            return None if not isinstance(wanted, Mapping) else {self._tool: wanted}
        return {str(k): v for k, v in own.items() if isinstance(v, Mapping)}

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        expectations = self._expectations(sample)
        if expectations is None:
            return _missing(sample, "expected-tool-arguments", "expected")
        if not expectations:
            return EvaluationResult(
                True, 1.0, f"Nothing to check: sample {sample.name!r} expects no tool's arguments"
            )
        exact = self._match == "exact"
        scores, problems = [], []
        for tool, expected in expectations.items():
            calls = trace.calls_of(tool)
            if not calls:
                scores.append(0.0)
                problems.append(f"{tool!r} was not called ({_called(trace)})")
                continue
            found = [(_mismatch(expected, call, exact), call) for call in calls]
            best, call = min(found, key=lambda item: len(item[0]))
            total = len(expected) + (len(call.arguments) if exact else 0) or 1
            scores.append(1.0 if not best else max(0.0, 1.0 - len(best) / total))
            if best:
                problems.append(
                    f"no call of {tool!r} had {show_call(tool, expected)}: the closest, "
                    f"{show_call(tool, call.arguments)}, differs: {best[0]}"
                )
        score = sum(scores) / len(scores)
        if problems:
            text = "; ".join(problems)
            return EvaluationResult(False, score, text[:1].upper() + text[1:])
        shown = ", ".join(show_call(tool, expected) for tool, expected in expectations.items())
        return EvaluationResult(True, 1.0, f"Called {shown}")


_ARGUMENT_MODES = ("exact", "ignore", "subset", "superset")
_TRAJECTORY_MODES = {
    # agentevals' trajectory modes: (order, extra_calls, missing_calls)
    "strict": ("exact", "fail", "fail"),
    "unordered": ("any", "fail", "fail"),
    "superset": ("any", "allow", "fail"),
    "subset": ("any", "fail", "allow"),
}


def _argument_override(tool: Any, value: Any) -> str | tuple[str, ...] | ArgumentMatcher:
    if not isinstance(tool, str) or not tool:
        raise TypeError(f"tool_arguments must be keyed by tool name, got {tool!r}")
    if isinstance(value, str):
        return check_choice(value, f"tool_arguments[{tool!r}]", _ARGUMENT_MODES)
    if callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, Iterable) and not isinstance(value, bytes | Mapping):
        keys = tuple(value)
        if keys and all(isinstance(key, str) and key for key in keys):
            return keys
    raise TypeError(
        f"tool_arguments[{tool!r}] must be an argument mode ({', '.join(_ARGUMENT_MODES)}), "
        f"a list of argument names (dotted for nested ones) or a callable "
        f"matcher(actual_arguments, expected_arguments) -> bool, got {value!r}"
    )


class ToolCallsStrategy(_AgentStrategy):
    """Passes when the calls made match the sample's ``expected-calls`` one to one.

    Each expected call is matched to exactly one actual call of the same tool whose
    arguments meet its rules (a literal, ``any-of``, ``optional``, nested in lists and
    mappings); with the sample's ``functions``, a call missing a required argument or
    passing an unknown one matches nothing. ``expected-calls: []`` expects no call. The
    explanation names each expected call left unmatched and each unexpected call, with the
    closest candidate and the argument that differs. The score is the share of calls matched.

    Args:
        order: ``"exact"`` (the same positions), ``"in-order"`` (the same order, others
            between when ``extra_calls="allow"``) or ``"any"``; ``None`` takes the sample's
            ``expected-calls-order`` (``exact`` when it has none).
        extra_calls: ``"fail"`` (every call must be expected) or ``"allow"``.
        missing_calls: ``"fail"`` (every expected call must be made) or ``"allow"`` (the
            calls made must be expected ones, some may be missing).
        matching: ``"optimal"`` (a one-to-one assignment whenever one exists) or
            ``"greedy"`` (each expected call in turn takes the first free call that fits, as
            bfcl-eval and agentevals do).
        strings: ``"exact"`` or ``"normalized"`` (BFCL's: case-folded, spaces and
            ``,./-_*^`` removed, ``'`` read as ``"``).
        types: ``"strict"`` (a bool is not a number, an int is accepted for a float, a
            float is not an int), ``"python"`` (``==``, so ``True`` equals ``1``) or
            ``"bfcl"`` (bfcl-eval's checker: the type the function's schema declares
            decides, quirks included).
        arguments: ``"exact"`` (every argument as expected, no other), ``"superset"`` (other
            arguments allowed), ``"subset"`` (every argument passed is expected, expected
            ones may be absent) or ``"ignore"`` (names only).
        tool_arguments: Per tool, an argument mode, a list of argument names to compare
            (dotted paths reach nested ones; a missing and a null value are alike) or a
            callable ``matcher(actual_arguments, expected_arguments) -> bool`` given the
            arguments as the sample wrote them.
        name: The name of the report rows.

    Raises:
        ValueError: An option outside its values.
        TypeError: A malformed ``tool_arguments``.
    """

    __slots__ = ("_extra", "_matching", "_missing", "_order", "_preset", "_rules")

    def __init__(
        self,
        *,
        order: Literal["exact", "in-order", "any"] | None = None,
        extra_calls: Literal["fail", "allow"] = "fail",
        missing_calls: Literal["fail", "allow"] = "fail",
        matching: Literal["optimal", "greedy"] = "optimal",
        strings: Literal["exact", "normalized"] = "exact",
        types: Literal["strict", "python", "bfcl"] = "strict",
        arguments: Literal["exact", "ignore", "subset", "superset"] = "exact",
        tool_arguments: Mapping[str, str | Sequence[str] | ArgumentMatcher] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._order = None if order is None else _order_option(order)
        self._extra = check_choice(extra_calls, "extra_calls", ("fail", "allow"))
        self._missing = check_choice(missing_calls, "missing_calls", ("fail", "allow"))
        self._matching = check_choice(matching, "matching", ("optimal", "greedy"))
        if tool_arguments is not None and not isinstance(tool_arguments, Mapping):
            raise TypeError(
                f"tool_arguments must map tool names to argument modes, got {tool_arguments!r}"
            )
        self._rules = CallRules(
            arguments=check_choice(arguments, "arguments", _ARGUMENT_MODES),
            tool_arguments={
                tool: _argument_override(tool, value)
                for tool, value in (tool_arguments or {}).items()
            },
            strings=check_choice(strings, "strings", ("exact", "normalized")),
            types=check_choice(types, "types", ("strict", "python", "bfcl")),
        )
        self._preset: str | None = None

    @classmethod
    def bfcl(cls, *, name: str | None = None) -> ToolCallsStrategy:
        """The Berkeley Function Calling Leaderboard's verdicts (bfcl-eval's ``ast_checker``).

        The calls in any order, as many as expected, matched greedily; strings normalized;
        values checked by the type the sample's ``functions`` declare, as bfcl-eval checks
        them (see ``docs/agents.md``). Samples from :func:`aeval.load_bfcl` carry both.
        """
        strategy = cls(
            order="any",
            matching="greedy",
            strings="normalized",
            types="bfcl",
            name=name,
        )
        strategy._preset = "bfcl"
        return strategy

    @classmethod
    def trajectory(
        cls,
        mode: Literal["strict", "unordered", "subset", "superset"] = "strict",
        *,
        arguments: Literal["exact", "ignore", "subset", "superset"] = "exact",
        tool_arguments: Mapping[str, str | Sequence[str] | ArgumentMatcher] | None = None,
        name: str | None = None,
    ) -> ToolCallsStrategy:
        """agentevals' trajectory match modes, as its documentation describes them.

        ``"strict"``: the same calls in the same order; ``"unordered"``: the same calls in any
        order; ``"superset"``: at least the expected calls; ``"subset"``: only expected calls.
        Values compare with ``==`` (``types="python"``), as agentevals does. Where agentevals'
        code departs from its documentation aeval follows the documentation (see
        ``docs/agents.md``).
        """
        order, extra, missing = _TRAJECTORY_MODES[
            check_choice(mode, "mode", tuple(_TRAJECTORY_MODES))
        ]
        return cls(
            order=order,  # type: ignore[arg-type]
            extra_calls=extra,  # type: ignore[arg-type]
            missing_calls=missing,  # type: ignore[arg-type]
            types="python",
            arguments=arguments,
            tool_arguments=tool_arguments,
            name=name,
        )

    def _config(self) -> dict[str, Any]:
        if self._preset is not None:
            return {"preset": self._preset}
        rules = self._rules
        return {
            "order": self._order,
            "extra_calls": self._extra,
            "missing_calls": self._missing,
            "matching": self._matching,
            "strings": rules.strings,
            "types": rules.types,
            "arguments": rules.arguments,
            "tool_arguments": dict(rules.tool_arguments) or None,
        }

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        written = sample.metadata.get(EXPECTED_CALLS)
        if written is None:
            return not_stated(
                sample,
                "expected-calls",
                "add expected-calls: [{name: ..., arguments: {...}}] to it ([] when no tool "
                "should be called)",
            )
        try:
            expected = compile_calls(written)
            functions = sample.metadata.get(FUNCTIONS)
            schemas = None if functions is None else compile_functions(functions)
            order = self._order or read_order(sample.metadata.get(EXPECTED_CALLS_ORDER, "exact"))
        except ValueError as exc:
            return EvaluationResult.failing(f"Sample {sample.name!r}: {exc}")
        outcome = match_calls(
            expected,
            trace.tool_calls,
            functions=schemas,
            rules=self._rules,
            order=order,
            matching=self._matching,
            extra_calls=self._extra,
            missing_calls=self._missing,
        )
        metadata = {
            "order": order,
            "matched": [list(pair) for pair in outcome.pairs],
            "unmatched_expected": list(outcome.unmatched),
            "unexpected_calls": list(outcome.unexpected),
        }
        return EvaluationResult(outcome.passed, outcome.score, outcome.explanation, metadata)


def _order_option(value: object) -> str:
    if isinstance(value, str) and value.replace("_", "-") in ("exact", "in-order", "any"):
        return value.replace("_", "-")
    raise ValueError(f"order must be 'exact', 'in-order' or 'any', got {value!r}")


class BudgetStrategy(_AgentStrategy):
    """Passes when the run stayed within its budgets; the score is the share of budgets kept.

    Args:
        max_tool_calls: The most tool calls.
        max_model_calls: The most model calls.
        max_tokens: The most tokens over all model calls. A model call that reported no
            token counts (a stream without ``stream_options.include_usage``) is never counted
            as 0: the budget fails as unknown, or as over when the counted tokens exceed it.
        max_seconds: The most seconds from the first event's start to the last's end.
        name: The name of the report rows.

    Raises:
        ValueError: No budget, or a negative one.
    """

    __slots__ = ("_budgets",)

    def __init__(
        self,
        *,
        max_tool_calls: int | None = None,
        max_model_calls: int | None = None,
        max_tokens: int | None = None,
        max_seconds: float | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        budgets: dict[str, float] = {}
        for option, value in (
            ("max_tool_calls", max_tool_calls),
            ("max_model_calls", max_model_calls),
            ("max_tokens", max_tokens),
        ):
            count = _count(value, option)
            if count is not None:
                budgets[option] = count
        if max_seconds is not None:
            if isinstance(max_seconds, bool) or not isinstance(max_seconds, int | float):
                raise TypeError(f"max_seconds must be a number, got {max_seconds!r}")
            if max_seconds < 0:
                raise ValueError(f"max_seconds must not be negative, got {max_seconds!r}")
            budgets["max_seconds"] = float(max_seconds)
        if not budgets:
            raise ValueError(
                "BudgetStrategy needs a budget: max_tool_calls, max_model_calls, max_tokens "
                "or max_seconds"
            )
        self._budgets = budgets

    def _config(self) -> dict[str, Any]:
        return dict(self._budgets)

    def _check(self, sample: EvaluationSample, trace: Trace) -> EvaluationResult:
        used: dict[str, float | None] = {
            "max_tool_calls": len(trace.tool_calls),
            "max_model_calls": len(trace.model_calls),
            "max_tokens": trace.tokens,
            "max_seconds": trace.seconds or 0.0,
        }
        labels = {
            "max_tool_calls": "tool calls",
            "max_model_calls": "model calls",
            "max_tokens": "tokens",
            "max_seconds": "seconds",
        }
        uncounted = sum(
            call.prompt_tokens is None or call.completion_tokens is None
            for call in trace.model_calls
        )
        over: list[str] = []
        within: list[str] = []
        for option, limit in self._budgets.items():
            value = used[option] or 0
            shown = f"{value:.2f}" if option == "max_seconds" else f"{value:g}"
            text = f"{shown} {labels[option]} (budget {limit:g})"
            if option == "max_tokens" and uncounted and value <= limit:
                over.append(f"tokens unknown: {_uncounted(uncounted, len(trace.model_calls))}")
                continue
            if option == "max_tokens" and uncounted:
                text = f"at least {text}"
            (over if value > limit else within).append(text)
        metadata = {option.removeprefix("max_"): used[option] for option in self._budgets}
        if "max_tokens" in self._budgets:
            metadata["uncounted_model_calls"] = uncounted
        score = len(within) / len(self._budgets)
        if over:
            return EvaluationResult(False, score, "Over budget: " + "; ".join(over), metadata)
        return EvaluationResult(True, 1.0, "Within budget: " + "; ".join(within), metadata)


def _uncounted(uncounted: int, calls: int) -> str:
    """Why a token budget cannot be checked: which model calls reported no tokens."""
    return (
        f"{uncounted} of {calls} model calls reported no token counts (a streamed chat "
        "completion reports them only when its request sets stream_options.include_usage: "
        "set the framework's option for it, or aeval.integrations.openai.instrument("
        "stream_usage=True)); the token budget is not checked on a partial count"
    )
