"""Mock tools: a sample's fixtures, and the results recorded in a stored run (replay)."""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike, fspath
from typing import Any

import orjson

from .._exceptions import ToolError, ToolTimeoutError, UnmockedToolCall
from ._bounds import TraceLimits, bounded
from ._keys import TOOL_FIXTURES
from ._values import CallError, ToolCall, Trace

__all__ = [
    "Fixture",
    "Fixtures",
    "Replay",
    "ReplaySession",
    "canonical_arguments",
    "show_call",
]

_TIMEOUTS = frozenset({"timeout", "timed out", "timeouterror"})
_SHOWN = 80


_WHOLE = TraceLimits(max_text=sys.maxsize, max_items=sys.maxsize, max_depth=200)
"""Limits that keep every value whole (deeper than 200 levels is cut, and then never
matches): what matching compares, so no two values that differ anywhere are taken as one."""


def canonical_arguments(arguments: Mapping[str, Any]) -> str:
    """The arguments as canonical JSON (sorted keys, JSON-safe, nothing cut), the key replay
    matches on."""
    safe, _ = bounded(dict(arguments), _WHOLE)
    return orjson.dumps(safe, option=orjson.OPT_SORT_KEYS).decode()


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def show_call(name: str, arguments: Mapping[str, Any]) -> str:
    """``get_weather(city='Mysore')``."""
    return f"{name}({', '.join(f'{key}={_shown(value)}' for key, value in arguments.items())})"


def _raise_error(tool: str, error: CallError | str) -> Any:
    if isinstance(error, str):
        kind, message = None, error
    else:
        kind, message = error.type, error.message
    timeout = (kind or message).strip().lower() in _TIMEOUTS or kind in (
        "TimeoutError",
        "ToolTimeoutError",
    )
    shown = f"{kind}: {message}" if kind and message else kind or message
    if timeout:
        raise ToolTimeoutError(
            f"{tool} timed out ({shown}, served by a fixture or a replayed run)",
            tool=tool,
            type=kind,
        )
    raise ToolError(
        f"{tool} failed: {shown} (served by a fixture or a replayed run)", tool=tool, type=kind
    )


@dataclass(frozen=True, slots=True)
class Fixture:
    """One fixture of a tool: the arguments it answers (a subset of the call's) and its result
    or error.

    Attributes:
        arguments: The arguments a call must hold (with these values) to match.
        result: What the tool returns.
        error: The error it raises instead: ``"timeout"`` raises
            :class:`~aeval.ToolTimeoutError`, any other text :class:`~aeval.ToolError`.
    """

    arguments: Mapping[str, Any]
    result: Any = None
    error: str | None = None

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with ``arguments`` holds every argument of this fixture."""
        return all(
            key in arguments and _same(arguments[key], value)
            for key, value in self.arguments.items()
        )


def _same(actual: Any, expected: Any) -> bool:
    if actual == expected:
        return True
    (whole_actual, cut_actual), (whole_expected, cut_expected) = (
        bounded(actual, _WHOLE),
        bounded(expected, _WHOLE),
    )
    return not (cut_actual or cut_expected) and bool(whole_actual == whole_expected)


def _fixture_problem(tool: str, index: int, item: Any) -> str | None:
    where = f"tools.{tool}[{index}]"
    if not isinstance(item, Mapping):
        return f"{where} must be a mapping with 'arguments' and 'result' (or 'error')"
    unknown = sorted(str(key) for key in item if key not in ("arguments", "result", "error"))
    if unknown:
        return (
            f"{where} has unknown keys {', '.join(map(repr, unknown))}: a fixture has only "
            "'arguments', 'result' and 'error'"
        )
    arguments = item.get("arguments", {})
    if arguments is not None and not isinstance(arguments, Mapping):
        return f"{where}.arguments must be a mapping of argument names to values (or {{}})"
    if "error" in item and "result" in item:
        return f"{where} has both 'result' and 'error': a fixture either returns or raises"
    if "error" not in item and "result" not in item:
        return f"{where} has neither 'result' nor 'error': add result: ... (or error: timeout)"
    if "error" in item and (not isinstance(item["error"], str) or not item["error"].strip()):
        return f'{where}.error must be a non-empty message such as "timeout"'
    return None


class Fixtures:
    """The ``tools:`` fixtures of a sample: ``@aeval.tool`` functions get these results.

    A call matches a fixture of its tool when it holds the fixture's arguments (a subset;
    the call may have more); the first match wins. A call that matches none (or of a tool
    with no fixtures) raises :class:`~aeval.UnmockedToolCall`: never a silent live call.

    Example:
        >>> fixtures = Fixtures({"get_weather": [{"arguments": {"city": "Mysore"},
        ...                                         "result": "sunny, 31°C"}]})
        >>> fixtures.serve("get_weather", {"city": "Mysore", "unit": "C"})
        'sunny, 31°C'

    Args:
        tools: ``{tool_name: [{"arguments": {...}, "result": ...} | {"arguments": {...},
            "error": "..."}]}``, as under a sample's ``tools:`` key.

    Raises:
        ValueError: The mapping is not in that form, naming the entry and the fix.
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Mapping[str, Sequence[Mapping[str, Any] | Fixture]]) -> None:
        problem = self.problem(tools)
        if problem is not None:
            raise ValueError(problem)
        self._tools: dict[str, tuple[Fixture, ...]] = {
            name: tuple(
                item
                if isinstance(item, Fixture)
                else Fixture(
                    dict(item.get("arguments") or {}), item.get("result"), item.get("error")
                )
                for item in items
            )
            for name, items in tools.items()
        }

    @classmethod
    def from_sample(cls, sample: Any) -> Fixtures:
        """The fixtures of a sample (its ``tools:`` key); none when it has none.

        Args:
            sample: An :class:`~aeval.EvaluationSample`.
        """
        tools = sample.metadata.get(TOOL_FIXTURES)
        return cls({} if tools is None else tools)

    @staticmethod
    def problem(tools: object) -> str | None:
        """What is wrong with a ``tools:`` mapping, or ``None`` when it can be used."""
        if not isinstance(tools, Mapping):
            return (
                "'tools' must be a mapping of tool names to lists of fixtures, e.g. tools: "
                "{get_weather: [{arguments: {city: Mysore}, result: sunny}]}"
            )
        for name, items in tools.items():
            if not isinstance(name, str) or not name:
                return f"tool names under 'tools' must be non-empty strings, got {name!r}"
            if not isinstance(items, Sequence) or isinstance(items, str | bytes):
                return (
                    f"tools.{name} must be a list of fixtures ({{arguments: ..., result: ...}}), "
                    f"got {type(items).__name__}"
                )
            for index, item in enumerate(items):
                if isinstance(item, Fixture):
                    continue
                problem = _fixture_problem(name, index, item)
                if problem is not None:
                    return problem
        return None

    @property
    def tools(self) -> Mapping[str, tuple[Fixture, ...]]:
        """The fixtures of each tool."""
        return dict(self._tools)

    def serve(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """The first matching fixture's result (or its error, raised).

        Raises:
            UnmockedToolCall: No fixture of ``name`` matches ``arguments``.
            ToolError: The matching fixture's error.
        """
        fixtures = self._tools.get(name, ())
        for fixture in fixtures:
            if fixture.matches(arguments):
                if fixture.error is not None:
                    _raise_error(name, fixture.error)
                return copy.deepcopy(fixture.result)
        call = show_call(name, arguments)
        if not fixtures:
            known = ", ".join(sorted(self._tools)) or "none"
            reason = f"the sample has no fixtures for {name!r} (tools with fixtures: {known})"
        else:
            wanted = "; ".join(show_call(name, f.arguments) for f in fixtures[:3])
            reason = f"no fixture of {name!r} matches these arguments (its fixtures: {wanted})"
        raise UnmockedToolCall(
            f"unmocked tool call {call}: {reason}; add a fixture under the sample's tools: "
            f"{name}: [{{arguments: {{...}}, result: ...}}]",
            tool=name,
            arguments=arguments,
        )

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}: {len(items)}" for name, items in self._tools.items())
        return f"Fixtures({{{counts}}})"


class Replay:
    """Serve ``@aeval.tool`` results recorded in a stored run.

    A call is matched by (tool, canonical arguments, occurrence): the second call of
    ``get_weather(city="Mysore")`` in a sample gets the result of the second such call
    recorded for that sample. A call with no recording raises
    :class:`~aeval.UnmockedToolCall`, naming what differs from the closest recorded call.

    The traces come from :meth:`load` (the Scorer awaits it when the run starts) or are
    given with :meth:`from_traces`; each (sample, repeat) is served the trace recorded for
    it (a sample recorded once serves every repeat).

    Args:
        ref: The recorded run: a stored run's id or reference such as ``latest`` or
            ``NAME@latest~1``, or the path of a run's ``rows.jsonl`` or ``report.json``.
        store: The run store holding it (its path or a ``RunStore``); when ``None``,
            ``$AEVAL_STORE``, else ``.aeval/runs.sqlite``.
    """

    __slots__ = ("_traces", "ref", "store")

    def __init__(self, ref: str | PathLike[str], *, store: Any = None) -> None:
        if isinstance(ref, PathLike):
            ref = fspath(ref)
        if not isinstance(ref, str) or not ref.strip():
            raise ValueError(f"Replay needs a stored run's reference (e.g. 'latest'), got {ref!r}")
        self.ref = ref
        self.store = store
        self._traces: dict[str | tuple[str, int], Trace] | None = None

    @classmethod
    def from_traces(
        cls, traces: Mapping[str | tuple[str, int], Trace | None], *, ref: str = "traces"
    ) -> Replay:
        """A replay of the given traces, keyed by sample name or (sample name, repeat)."""
        replay = cls(ref)
        replay._traces = {key: trace for key, trace in traces.items() if trace is not None}
        return replay

    @property
    def loaded(self) -> bool:
        """Whether the recorded traces are loaded."""
        return self._traces is not None

    async def load(self) -> None:
        """Read the recorded traces of ``ref``: a stored run (from ``store``), or a run's
        ``rows.jsonl`` or ``report.json`` when ``ref`` is such a file.

        Raises:
            ComparisonError: The file or the stored run cannot be read (naming it).
        """
        from .._compare._refs import load_report

        report = await load_report(self.ref, role="replay source", store=self.store)
        traces: dict[str | tuple[str, int], Trace] = {}
        for row in report.evaluations:
            if row.trace is not None:
                traces.setdefault((row.sample.name, row.repeat), row.trace)
                if row.repeat == 0:
                    traces.setdefault(row.sample.name, row.trace)
        self._traces = traces

    def for_sample(self, name: str, repeat: int = 0) -> ReplaySession:
        """The replay of one (sample, repeat): a fresh count of occurrences.

        Raises:
            RuntimeError: The traces are not loaded.
        """
        if self._traces is None:
            raise RuntimeError(f"Replay({self.ref!r}) is not loaded: await replay.load() first")
        trace = self._traces.get((name, repeat))
        if trace is None:
            trace = self._traces.get(name)
        return ReplaySession(name, () if trace is None else trace.tool_calls, ref=self.ref)

    def __repr__(self) -> str:
        return f"Replay({self.ref!r})"


class ReplaySession:
    """The recorded tool calls of one sample, served in occurrence order (thread-safe)."""

    __slots__ = ("_by_key", "_calls", "_lock", "_seen", "ref", "sample")

    def __init__(self, sample: str, calls: Sequence[ToolCall], *, ref: str = "") -> None:
        self.sample = sample
        self.ref = ref
        self._calls = tuple(calls)
        self._by_key: dict[tuple[str, str], list[ToolCall]] = {}
        for call in self._calls:
            self._by_key.setdefault((call.name, canonical_arguments(call.arguments)), []).append(
                call
            )
        self._seen: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def serve(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """The recorded result of this occurrence of the call (or its error, raised).

        Raises:
            UnmockedToolCall: Nothing was recorded for this call.
            ToolError: The recorded call raised.
        """
        key = (name, canonical_arguments(arguments))
        with self._lock:
            occurrence = self._seen.get(key, 0)
            self._seen[key] = occurrence + 1
        recorded = self._by_key.get(key, [])
        if occurrence < len(recorded):
            call = recorded[occurrence]
            if call.truncated:
                raise UnmockedToolCall(
                    f"tool call {show_call(name, arguments)} in sample {self.sample!r} cannot "
                    f"be replayed: {self._cut_reason(call)}",
                    tool=name,
                    arguments=arguments,
                )
            if call.error is not None:
                _raise_error(name, call.error)
            return copy.deepcopy(call.result)
        cut = next((c for c in self._calls if c.name == name and c.truncated), None)
        if cut is not None and not recorded:
            raise UnmockedToolCall(
                f"unmocked tool call {show_call(name, arguments)} in sample {self.sample!r}: "
                f"no recorded call matches it whole, and {self._cut_reason(cut)}",
                tool=name,
                arguments=arguments,
            )
        raise UnmockedToolCall(
            f"unmocked tool call {show_call(name, arguments)} in sample {self.sample!r}: "
            f"{self._difference(name, arguments, occurrence, len(recorded))}",
            tool=name,
            arguments=arguments,
        )

    def _cut_reason(self, call: ToolCall) -> str:
        run = f"the replayed run {self.ref!r}" if self.ref else "the replayed run"
        return (
            f"{run} recorded {show_call(call.name, call.arguments)} cut to its trace limits "
            f"({call.truncated} value(s) cut), so neither its arguments can be matched nor "
            "its result served whole; record the run again with larger limits "
            "(Scorer(trace_limits=aeval.trace.TraceLimits(max_text=..., max_items=...)))"
        )

    def _difference(
        self, name: str, arguments: Mapping[str, Any], occurrence: int, recorded: int
    ) -> str:
        run = f"the replayed run {self.ref!r}" if self.ref else "the replayed run"
        if recorded:
            return f"{run} recorded this call {recorded} time(s) and this is call {occurrence + 1}"
        same = [call for call in self._calls if call.name == name]
        if not same:
            names = ", ".join(sorted({call.name for call in self._calls})) or "no tool"
            return f"{run} never called {name!r} in this sample (it called {names})"
        safe, _ = bounded(dict(arguments))
        closest = min(same, key=lambda call: len(_differences(safe, call.arguments)))
        changes = "; ".join(_differences(safe, closest.arguments)[:3])
        return f"the closest recorded call is {show_call(name, closest.arguments)}: {changes}"


def _differences(actual: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    found = []
    for key in sorted({*actual, *recorded}):
        if key not in recorded:
            found.append(f"{key!r} was not recorded (now {_shown(actual[key])})")
        elif key not in actual:
            found.append(f"{key!r} is missing (recorded {_shown(recorded[key])})")
        elif actual[key] != recorded[key]:
            found.append(
                f"{key!r} differs: recorded {_shown(recorded[key])}, now {_shown(actual[key])}"
            )
    return found
