"""How an actual argument value is compared with an expected one (a literal or a rule).

``strings``: ``"exact"``, or ``"normalized"`` as the Berkeley Function Calling Leaderboard
compares them (case-folded; spaces and ``,./-_*^`` removed; ``'`` read as ``"``).
``types``: ``"strict"`` (a bool is not a number, an int is accepted where a float is expected,
a float is not an int), ``"python"`` (Python's ``==``: ``True`` equals ``1``), or ``"bfcl"``
(bfcl-eval's ``ast_checker``: the parameter's declared type decides, see :func:`bfcl_problem`).
Each function returns ``None`` when the value is accepted, else the reason in words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._samples._expected_calls import Exact, Rule
from ._text_common import show_value

__all__ = [
    "bfcl_problem",
    "compact",
    "mapping_problem",
    "normalize",
    "plain",
    "show_expected",
    "value_problem",
]

_BFCL_PUNCTUATION = re.compile(r"[ ,./\-_*^]")
_BFCL_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
"""bfcl-eval's Python reading of its schema types (its ``any`` is a string)."""
_OPTIONAL_MARK = ""
"""How BFCL's answers say "may be absent": an empty string among the acceptable values."""


def normalize(text: str) -> str:
    """A string as BFCL compares it: no spaces nor ``,./-_*^``, lower case, ``'`` as ``"``."""
    return _BFCL_PUNCTUATION.sub("", text).lower().replace("'", '"')


def plain(value: Any) -> Any:
    """An expected value written back as the sample wrote it (rules as mappings)."""
    if isinstance(value, Exact):
        return {"equals": value.value}
    if isinstance(value, Rule):
        written: dict[str, Any] = {}
        if value.options is not None:
            written["any-of"] = [plain(option) for option in value.options]
        if value.optional:
            written["optional"] = True
        return written
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


def compact(value: Any) -> str:
    """An expected value in a call's rendering: ``('Mysore' | 'Mysuru')``, ``'C'?``, ``*``."""
    if isinstance(value, Exact):
        return show_value(value.value)
    if isinstance(value, Rule):
        if value.options is None:
            shown = "*"
        elif len(value.options) == 1:
            shown = compact(value.options[0])
        else:
            shown = "(" + " | ".join(compact(option) for option in value.options) + ")"
        return shown + "?" if value.optional else shown
    if isinstance(value, tuple):
        return "[" + ", ".join(compact(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key!r}: {compact(item)}" for key, item in value.items()) + "}"
    return show_value(value)


def show_expected(value: Any) -> str:
    """An expected value for a message: ``one of 'a', 'b'``, ``any value``, a literal."""
    if isinstance(value, Exact):
        return show_value(value.value)
    if isinstance(value, Rule):
        if value.options is None:
            return "any value"
        if len(value.options) == 1:
            return show_expected(value.options[0])
        return "one of " + ", ".join(show_expected(option) for option in value.options)
    return show_value(plain(value))


def _same_scalar(expected: Any, actual: Any, strings: str, types: str) -> bool:
    if isinstance(expected, str):
        if not isinstance(actual, str):
            return False
        return expected == actual or (
            strings == "normalized" and normalize(expected) == normalize(actual)
        )
    if types == "python":
        return bool(expected == actual)
    if expected is None or isinstance(expected, bool):
        return actual is expected
    if isinstance(actual, bool) or not isinstance(actual, int | float):
        return False
    if isinstance(expected, int) and not isinstance(actual, int):
        return False
    return bool(expected == actual)


def value_problem(
    expected: Any, actual: Any, *, strings: str, types: str, depth: int = 0
) -> str | None:
    """Why ``actual`` does not match the expected value or rule, or ``None`` when it does."""
    if isinstance(expected, Exact):
        return (
            None
            if _equal_plain(expected.value, actual, strings, types)
            else (f"is {show_value(actual)}, expected {show_value(expected.value)}")
        )
    if isinstance(expected, Rule):
        if expected.options is None:
            return None
        for option in expected.options:
            if value_problem(option, actual, strings=strings, types=types, depth=depth + 1) is None:
                return None
        return f"is {show_value(actual)}, expected {show_expected(expected)}"
    if isinstance(expected, tuple):
        if not isinstance(actual, list | tuple):
            return f"is {show_value(actual)}, expected a list"
        if len(actual) != len(expected):
            return f"has {len(actual)} items, expected {len(expected)}: {show_expected(expected)}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            problem = value_problem(want, got, strings=strings, types=types, depth=depth + 1)
            if problem is not None:
                return f"item {index} {problem}"
        return None
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return f"is {show_value(actual)}, expected a mapping"
        problem = mapping_problem(expected, actual, strings=strings, types=types, extra="fail")
        return None if problem is None else problem
    if _same_scalar(expected, actual, strings, types):
        return None
    return f"is {show_value(actual)}, expected {show_value(expected)}"


def mapping_problem(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    strings: str,
    types: str,
    extra: str,
    missing: str = "fail",
) -> str | None:
    """Why ``actual``'s keys and values differ from ``expected``'s, or ``None``.

    ``extra="allow"`` accepts keys that are not expected; ``missing="allow"`` accepts the
    absence of any expected key (else only of optional ones).
    """
    for key, want in expected.items():
        if key not in actual:
            if missing == "allow" or (isinstance(want, Rule) and want.optional):
                continue
            return f"{key!r} is missing (expected {show_expected(want)})"
        problem = value_problem(want, actual[key], strings=strings, types=types)
        if problem is not None:
            return f"{key!r} {problem}"
    if extra != "allow":
        for key in actual:
            if key not in expected:
                return f"{key!r} was not expected (it is {show_value(actual[key])})"
    return None


def _equal_plain(expected: Any, actual: Any, strings: str, types: str) -> bool:
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and expected.keys() == actual.keys()
            and all(_equal_plain(expected[k], actual[k], strings, types) for k in expected)
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(
                _equal_plain(e, a, strings, types) for e, a in zip(expected, actual, strict=True)
            )
        )
    return _same_scalar(expected, actual, strings, types)


# bfcl-eval's ast_checker, as its code behaves (facts read from bfcl-eval 2026.3.23's
# bfcl_eval/eval_checker/ast_eval/ast_checker.py, its Python path; the words are ours).


def _answers(expected: Any) -> list[Any]:
    """The expected value as BFCL's list of acceptable values ("" marking "may be absent")."""
    if isinstance(expected, Rule):
        answers = [_bfcl_plain(option) for option in expected.options or ()]
        return [*answers, _OPTIONAL_MARK] if expected.optional else answers
    return [_bfcl_plain(expected)]


def _bfcl_plain(value: Any) -> Any:
    """A compiled value as BFCL's answers hold it: lists, and each mapping key's answers."""
    if isinstance(value, Exact):
        return value.value
    if isinstance(value, tuple):
        return [_bfcl_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _answers(item) for key, item in value.items()}
    return value


def _first_type(answers: Sequence[Any]) -> type | None:
    for answer in answers:
        if answer != _OPTIONAL_MARK:
            return type(answer)
    return None


def _item_type_ok(item: Any, answers: Any, item_type: type) -> bool:
    if type(item) is item_type:
        return True
    first = _first_type(answers)
    return first is not None and type(item) is first


def _bfcl_type(
    value: Any, answers: list[Any], declared: type[Any], item_type: type | None
) -> tuple[bool, bool]:
    """(the type is accepted, the value is compared as a "variable": plain membership)."""
    first = _first_type(answers)
    variable = first is not None and first is not declared
    if type(value) is declared:
        if item_type is None:
            return True, variable
        for answer in answers:
            if type(answer) is list and not all(
                _item_type_ok(item, answer, item_type) for item in value
            ):
                continue
            return True, variable
        return False, variable
    if first is not None and type(value) is first:
        return True, True
    return False, variable


def _standard(value: Any, strings: str) -> Any:
    return normalize(value) if strings == "normalized" and type(value) is str else value


def _dict_ok(value: Mapping[str, Any], answers: list[Any], strings: str) -> bool:
    for answer in answers:
        if answer == _OPTIONAL_MARK or not isinstance(answer, Mapping):
            continue
        if all(
            key in answer
            and _standard(item, strings) in [_standard(option, strings) for option in answer[key]]
            for key, item in value.items()
        ) and all(key in value or _OPTIONAL_MARK in options for key, options in answer.items()):
            return True
    return False


def _list_ok(value: list[Any], answers: list[Any], strings: str) -> bool:
    standard = [_standard(item, strings) for item in value]
    return any(
        isinstance(answer, str | list) and standard == [_standard(x, strings) for x in answer]
        for answer in answers
    )


def _list_of_dicts_ok(value: list[Any], answers: list[Any], strings: str) -> bool:
    for answer in answers:
        if not isinstance(answer, str | list) or len(value) != len(answer):
            continue
        if all(
            isinstance(item, Mapping) and _dict_ok(item, [want], strings)
            for item, want in zip(value, answer, strict=True)
        ):
            return True
    return False


def bfcl_problem(
    expected: Any, actual: Any, schema: Mapping[str, Any], *, strings: str
) -> str | None:
    """Why bfcl-eval's checker refuses ``actual`` for a parameter of schema ``schema``.

    The declared type decides: ``float`` takes an int; a value of the answers' own type
    when that differs from the declared one (BFCL's "variable") is compared by plain
    membership, not normalized; ``array``/``tuple`` items are type-checked one level deep
    against some answer (never when the argument may be absent); strings, the strings in a
    list, and the values of a ``dict`` (and of each mapping of a list of them, in order) are
    compared normalized (with ``strings="normalized"``), anything deeper with ``==``.
    """
    answers = _answers(expected)
    declared_name = schema.get("type")
    declared = _BFCL_TYPES.get(declared_name) if isinstance(declared_name, str) else None
    if declared is None:
        return value_problem(expected, actual, strings=strings, types="strict")
    item_type: type | None = None
    if declared_name in ("array", "tuple"):
        items = schema.get("items")
        item_name = items.get("type") if isinstance(items, Mapping) else None
        item_type = _BFCL_TYPES.get(item_name) if isinstance(item_name, str) else None
    value = actual
    if declared_name == "tuple" and type(value) is tuple:
        value = list(value)
    if declared_name == "float" and type(value) is int:
        value = float(value)
    accepted, variable = _bfcl_type(value, answers, declared, item_type)
    if not accepted:
        return (
            f"is {show_value(actual)}, of type {type(actual).__name__}, expected a {declared_name}"
        )
    if not variable:
        if declared is dict:
            ok = isinstance(value, Mapping) and _dict_ok(value, answers, strings)
        elif declared is list and item_type is dict:
            ok = _list_of_dicts_ok(value, answers, strings)
        elif declared is str:
            ok = _standard(value, strings) in [
                _standard(answer, strings) for answer in answers if type(answer) is str
            ]
        elif declared is list:
            ok = _list_ok(value, answers, strings)
        else:
            ok = value in answers
    else:
        ok = value in answers
    if ok:
        return None
    return f"is {show_value(actual)}, expected {show_expected(expected)}"
