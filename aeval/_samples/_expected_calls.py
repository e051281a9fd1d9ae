"""The ``expected-calls:``, ``expected-calls-order:`` and ``functions:`` keys of a sample.

A sample keeps them in its metadata as written (``expected_calls``, ``expected_calls_order``,
``functions``), so they stay plain JSON; :func:`compile_calls` and :func:`compile_functions`
turn them into the values the checks use, and the ``*_problem`` functions say what is wrong
with a written value in words a sample file's author can act on.

An argument's expected value is a literal or a rule, a mapping whose keys are only
``any-of`` (the acceptable values, each a literal or a rule), ``equals`` (one value taken
literally, rules inside it included) and ``optional`` (``true``: the argument may be absent).
Rules nest inside lists and mappings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANY_OF",
    "EQUALS",
    "OPTIONAL",
    "ORDERS",
    "Exact",
    "ExpectedCall",
    "Function",
    "Rule",
    "compile_calls",
    "compile_functions",
    "expected_calls_problem",
    "functions_problem",
    "order_problem",
    "read_order",
]

ANY_OF = "any-of"
EQUALS = "equals"
OPTIONAL = "optional"
_RULE_KEYS = frozenset({ANY_OF, EQUALS, OPTIONAL})
ORDERS = ("exact", "in-order", "any")
"""The values of ``expected-calls-order``: the calls in the same positions, in the same order
with others allowed between (when extra calls are allowed), in any order."""
_MAX_DEPTH = 32

_CALLS_FORM = (
    "write expected-calls: [{name: get_weather, arguments: {city: Mysore}}] "
    "(or [] when no tool should be called)"
)


@dataclass(frozen=True, slots=True)
class Rule:
    """An argument rule: one of ``options`` (``None``: any value), or absent if ``optional``."""

    options: tuple[Any, ...] | None
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Exact:
    """A value given with ``equals:``: compared as it is, rule-like mappings included."""

    value: Any


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One expected call: the tool, and its arguments (``None``: not checked).

    ``written`` is the arguments as the sample wrote them (rules unparsed).
    """

    name: str
    arguments: Mapping[str, Any] | None
    written: Mapping[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Function:
    """A function offered to the agent: its parameters' schemas and the required ones."""

    name: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]


class _Problem(ValueError):
    pass


def _is_rule(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(key in _RULE_KEYS for key in value)


def _compile_value(value: Any, where: str, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        raise _Problem(f"{where} nests deeper than {_MAX_DEPTH} levels")
    if _is_rule(value):
        return _compile_rule(value, where, depth)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise _Problem(f"{where} has a key that is not a string ({key!r}): quote it")
        return {
            key: _compile_value(item, f"{where}.{key}", depth + 1) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return tuple(
            _compile_value(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)
        )
    if value is None or isinstance(value, str | int | float):
        return value
    raise _Problem(f"{where} is a {type(value).__name__} ({value!r}): use JSON values")


def _compile_rule(rule: Mapping[str, Any], where: str, depth: int) -> Rule:
    optional = rule.get(OPTIONAL, False)
    if not isinstance(optional, bool):
        raise _Problem(f"{where}: 'optional' must be true or false, got {optional!r}")
    if ANY_OF in rule and EQUALS in rule:
        raise _Problem(f"{where} has both 'any-of' and 'equals': keep one of them")
    if EQUALS in rule:
        return Rule((Exact(rule[EQUALS]),), optional)
    if ANY_OF not in rule:
        return Rule(None, optional)
    options = rule[ANY_OF]
    if not isinstance(options, list | tuple):
        raise _Problem(
            f"{where}: 'any-of' must be a list of acceptable values, write "
            "{any-of: [Mysore, Mysuru]}"
        )
    if not options and not optional:
        raise _Problem(
            f"{where}: 'any-of: []' accepts no value: list the acceptable values, or add "
            "'optional: true' to say the argument must be absent"
        )
    return Rule(
        tuple(
            _compile_value(option, f"{where}.any-of[{index}]", depth + 1)
            for index, option in enumerate(options)
        ),
        optional,
    )


def compile_calls(value: Any) -> tuple[ExpectedCall, ...]:
    """The expected calls of a written ``expected-calls`` value.

    Raises:
        ValueError: The value is malformed; the message says how to write it.
    """
    if not isinstance(value, list | tuple):
        raise _Problem(f"'expected-calls' must be a list of calls, {_CALLS_FORM}")
    calls = []
    for index, item in enumerate(value, start=1):
        if isinstance(item, str) and item:
            calls.append(ExpectedCall(item, None))
            continue
        if not isinstance(item, Mapping):
            raise _Problem(
                f"expected call {index} is {item!r}: each call is a tool name or a mapping "
                f"with 'name' and 'arguments', {_CALLS_FORM}"
            )
        unknown = [key for key in item if key not in ("name", "arguments")]
        if unknown:
            raise _Problem(
                f"expected call {index} has unknown keys {unknown!r}: a call has only 'name' "
                "and 'arguments'"
            )
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _Problem(f"expected call {index} has no 'name': {_CALLS_FORM}")
        arguments = item.get("arguments")
        if arguments is None:
            calls.append(ExpectedCall(name, None))
            continue
        if not isinstance(arguments, Mapping):
            raise _Problem(
                f"the 'arguments' of expected call {index} ({name}) must map argument names "
                "to values or rules, write arguments: {city: {any-of: [Mysore, Mysuru]}}"
            )
        where = f"expected call {index} ({name}), argument"
        compiled = {}
        for key, argument in arguments.items():
            if not isinstance(key, str):
                raise _Problem(f"{where} {key!r}: argument names are strings, quote it")
            compiled[key] = _compile_value(argument, f"{where} {key!r}")
        calls.append(ExpectedCall(name, compiled, dict(arguments)))
    return tuple(calls)


def _problem(read: Callable[[Any], object], value: Any) -> str | None:
    """What ``read(value)`` finds wrong with ``value``, or ``None``."""
    try:
        read(value)
    except _Problem as exc:
        return str(exc)
    return None


def expected_calls_problem(value: Any) -> str | None:
    """What is wrong with a written ``expected-calls`` value, or ``None``."""
    return _problem(compile_calls, value)


def read_order(value: Any) -> str:
    """The ``expected-calls-order`` value ``value`` names (``in_order`` spells ``in-order``)."""
    if isinstance(value, str) and value.replace("_", "-") in ORDERS:
        return value.replace("_", "-")
    raise _Problem(
        f"'expected-calls-order' must be exact, in-order or any, got {value!r}: write "
        "expected-calls-order: any"
    )


def order_problem(value: Any) -> str | None:
    """What is wrong with a written ``expected-calls-order`` value, or ``None``."""
    return _problem(read_order, value)


_FUNCTIONS_FORM = (
    "write functions: [{name: get_weather, parameters: {type: object, properties: "
    "{city: {type: string}}, required: [city]}}]"
)


def _function(item: Any, index: int) -> Function:
    if isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
        item = item["function"]  # the OpenAI tools form: {type: function, function: {...}}
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
        raise _Problem(f"function {index} has no 'name': {_FUNCTIONS_FORM}")
    name = item["name"]
    parameters = item.get("parameters", {})
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, Mapping):
        raise _Problem(f"the 'parameters' of function {name!r} must be a JSON schema object")
    properties = parameters.get("properties", {})
    if not isinstance(properties, Mapping) or not all(
        isinstance(key, str) and isinstance(schema, Mapping) for key, schema in properties.items()
    ):
        raise _Problem(
            f"the 'properties' of function {name!r} must map each parameter to its schema"
        )
    required = parameters.get("required", [])
    if not isinstance(required, Sequence) or isinstance(required, str):
        raise _Problem(f"the 'required' of function {name!r} must be a list of parameter names")
    if not all(isinstance(each, str) for each in required):
        raise _Problem(f"the 'required' of function {name!r} must be a list of parameter names")
    return Function(name, dict(properties), tuple(required))


def compile_functions(value: Any) -> dict[str, Function]:
    """The functions of a written ``functions`` value, by name.

    Raises:
        ValueError: The value is malformed; the message says how to write it.
    """
    if not isinstance(value, list | tuple):
        raise _Problem(f"'functions' must be a list of function schemas, {_FUNCTIONS_FORM}")
    functions: dict[str, Function] = {}
    for index, item in enumerate(value, start=1):
        function = _function(item, index)
        functions[function.name] = function
    return functions


def functions_problem(value: Any) -> str | None:
    """What is wrong with a written ``functions`` value, or ``None``."""
    return _problem(compile_functions, value)
