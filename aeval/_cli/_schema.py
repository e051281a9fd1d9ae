"""The configuration's JSON Schema and a small validator for the subset of it that aeval uses.

The validator reports every problem with the JSON path of the key at fault
(``strategies[1].threshold: expected a number, got 'high'``) and suggests the closest
known key for a misspelt one. It understands ``type``, ``enum``, ``const``, ``required``,
``properties``, ``additionalProperties``, ``minProperties``, ``maxProperties``, ``items``,
``minItems``, ``maxItems``, ``minLength``, ``pattern``, ``minimum``, ``maximum``,
``exclusiveMinimum``, ``anyOf``, ``oneOf``, ``allOf``, ``if``/``then``/``else`` and local
``$ref``; annotations (``description``, ``default``, ``title``) are ignored, except
``x-pattern-hint``, which says in words what a ``pattern`` expects. JSON has no NaN or
infinity, so a number checked against ``type`` must be finite (YAML's ``.nan`` and ``.inf``
are not).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Problem", "Validator", "load_schema", "render_path", "schema_text"]

PathPart = str | int

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "null",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One violation of the schema: where it is and what is wrong.

    Attributes:
        path: The keys and list positions leading to the value at fault.
        message: What is wrong and, where possible, what to write instead.
    """

    path: tuple[PathPart, ...]
    message: str

    def __str__(self) -> str:
        return f"{render_path(self.path)}: {self.message}"


def render_path(path: Sequence[PathPart]) -> str:
    """``("strategies", 1, "threshold")`` → ``"strategies[1].threshold"``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


def schema_text() -> str:
    """The schema file shipped in the package, as text."""
    return (
        resources.files("aeval")
        .joinpath("schema/aeval-config.schema.json")
        .read_text(encoding="utf-8")
    )


def schema_command(args: argparse.Namespace) -> int:
    """``aeval schema``: print the JSON Schema of the configuration file."""
    sys.stdout.write(schema_text())
    return 0


@cache
def load_schema() -> Mapping[str, Any]:
    """The configuration schema, parsed (cached)."""
    schema: Mapping[str, Any] = json.loads(schema_text())
    return schema


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)
"""Python types and their JSON Schema type, the first that fits wins (a bool is an int)."""


def _json_type(value: Any) -> str:
    for python, name in _JSON_TYPES:
        if isinstance(value, python):
            return name
    return type(value).__name__


def _is_type(value: Any, expected: str) -> bool:
    actual = _json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


def _shown(value: Any) -> str:
    kind = _json_type(value)
    if kind == "array":
        return "a list"
    if kind == "object":
        return "a mapping"
    if kind == "null":
        return "null"
    if kind == "boolean":
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _suggest(word: str, choices: Sequence[str]) -> str | None:
    lowered = {choice.lower(): choice for choice in choices}
    if word.lower() in lowered:
        return lowered[word.lower()]
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def _quoted(items: Sequence[Any]) -> str:
    return ", ".join(repr(item) for item in items)


def _equal(a: Any, b: Any) -> bool:
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)


class Validator:
    """Checks a document against a JSON Schema (the subset in the module docstring).

    Args:
        schema: The root schema; ``$ref`` values are resolved against it.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._root = schema

    def validate(self, instance: Any) -> list[Problem]:
        """Every problem found in ``instance``, in document order; empty when it is valid."""
        return self._check(self._root, instance, ())

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#/"):
            raise ValueError(f"Only local $ref values are supported, got {ref!r}")
        node: Any = self._root
        for part in ref[2:].split("/"):
            node = node[part]
        resolved: Mapping[str, Any] = node
        return resolved

    def _types(self, schema: Mapping[str, Any]) -> set[str] | None:
        if "$ref" in schema:
            return self._types(self._resolve(schema["$ref"]))
        kind = schema.get("type")
        if isinstance(kind, str):
            return {kind}
        if isinstance(kind, list):
            return set(kind)
        branches = schema.get("anyOf") or schema.get("oneOf")
        if branches:
            found: set[str] = set()
            for branch in branches:
                types = self._types(branch)
                if types is None:
                    return None
                found |= types
            return found
        return None

    def _check(
        self, schema: Mapping[str, Any], value: Any, path: tuple[PathPart, ...]
    ) -> list[Problem]:
        if "$ref" in schema:
            problems = self._check(self._resolve(schema["$ref"]), value, path)
            if problems:
                return problems
        kind = schema.get("type")
        if kind is not None:
            kinds = [kind] if isinstance(kind, str) else list(kind)
            if not any(_is_type(value, k) for k in kinds):
                expected = " or ".join(_TYPE_NAMES.get(k, k) for k in kinds)
                return [Problem(path, f"expected {expected}, got {_shown(value)}")]
            if isinstance(value, float) and not math.isfinite(value):
                return [Problem(path, f"expected a finite number, got {value!r}")]
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                problems = self._any_of(schema[keyword], value, path)
                if problems:
                    return problems
        problems = []
        for sub in schema.get("allOf", ()):
            problems += self._check(sub, value, path)
        if "if" in schema:
            matched = not self._check(schema["if"], value, path)
            branch = schema.get("then" if matched else "else")
            if branch is not None:
                problems += self._check(branch, value, path)
        if "const" in schema and not _equal(value, schema["const"]):
            expected = _shown(schema["const"])
            problems.append(Problem(path, f"expected {expected}, got {_shown(value)}"))
        if "enum" in schema:
            problems += self._enum(schema["enum"], value, path)
        if isinstance(value, str):
            problems += self._string(schema, value, path)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            problems += self._number(schema, value, path)
        elif isinstance(value, list):
            problems += self._array(schema, value, path)
        elif isinstance(value, dict):
            problems += self._object(schema, value, path)
        return problems

    def _any_of(
        self, branches: Sequence[Mapping[str, Any]], value: Any, path: tuple[PathPart, ...]
    ) -> list[Problem]:
        results = [self._check(branch, value, path) for branch in branches]
        if any(not problems for problems in results):
            return []
        fitting = [
            problems
            for branch, problems in zip(branches, results, strict=True)
            if (types := self._types(branch)) is None or any(_is_type(value, t) for t in types)
        ]
        if fitting:
            return fitting[0]
        names: list[str] = []
        for branch in branches:
            for kind in sorted(self._types(branch) or ()):
                name = _TYPE_NAMES.get(kind, kind)
                if name not in names:
                    names.append(name)
        if not names:
            return results[0]
        expected = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        return [Problem(path, f"expected {expected}, got {_shown(value)}")]

    def _enum(
        self, choices: Sequence[Any], value: Any, path: tuple[PathPart, ...]
    ) -> list[Problem]:
        if any(_equal(value, choice) for choice in choices):
            return []
        message = f"expected one of {_quoted(choices)}, got {_shown(value)}"
        if isinstance(value, str):
            hint = _suggest(value, [c for c in choices if isinstance(c, str)])
            if hint is not None:
                message += f" (did you mean {hint!r}?)"
        return [Problem(path, message)]

    def _string(
        self, schema: Mapping[str, Any], value: str, path: tuple[PathPart, ...]
    ) -> list[Problem]:
        minimum = schema.get("minLength")
        if minimum is not None and len(value) < minimum:
            what = "must not be empty" if minimum == 1 else f"needs {minimum} characters or more"
            return [Problem(path, what)]
        pattern = schema.get("pattern")
        if pattern is not None and re.search(pattern, value) is None:
            hint = schema.get("x-pattern-hint") or f"a string matching {pattern}"
            return [Problem(path, f"expected {hint}, got {_shown(value)}")]
        return []

    def _number(
        self, schema: Mapping[str, Any], value: float, path: tuple[PathPart, ...]
    ) -> list[Problem]:
        if "minimum" in schema and value < schema["minimum"]:
            return [Problem(path, f"must be at least {schema['minimum']}, got {value!r}")]
        if "maximum" in schema and value > schema["maximum"]:
            return [Problem(path, f"must be at most {schema['maximum']}, got {value!r}")]
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return [
                Problem(path, f"must be greater than {schema['exclusiveMinimum']}, got {value!r}")
            ]
        return []

    def _array(
        self, schema: Mapping[str, Any], value: list[Any], path: tuple[PathPart, ...]
    ) -> list[Problem]:
        if "minItems" in schema and len(value) < schema["minItems"]:
            if schema["minItems"] == 1:
                return [Problem(path, "must not be empty")]
            return [Problem(path, f"needs at least {schema['minItems']} items, got {len(value)}")]
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return [Problem(path, f"takes at most {schema['maxItems']} items, got {len(value)}")]
        items = schema.get("items")
        problems: list[Problem] = []
        if items is not None:
            for index, item in enumerate(value):
                problems += self._check(items, item, (*path, index))
        return problems

    def _object(
        self, schema: Mapping[str, Any], value: dict[Any, Any], path: tuple[PathPart, ...]
    ) -> list[Problem]:
        problems: list[Problem] = []
        properties: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(Problem(path, f"missing required key {key!r}"))
        count = len(value)
        if "minProperties" in schema and count < schema["minProperties"]:
            problems.append(Problem(path, f"give one of {_quoted(list(properties))}"))
        if "maxProperties" in schema and count > schema["maxProperties"]:
            problems.append(
                Problem(
                    path,
                    f"give only {schema['maxProperties']} of {_quoted(list(properties))}, "
                    f"got {_quoted(list(value))}",
                )
            )
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = (*path, str(key))
            if key in properties:
                problems += self._check(properties[key], item, where)
            elif extra is False:
                problems.append(Problem(where, self._unknown(str(key), list(properties))))
            elif isinstance(extra, Mapping):
                problems += self._check(extra, item, where)
        return problems

    @staticmethod
    def _unknown(key: str, known: Sequence[str]) -> str:
        hint = _suggest(key, known)
        if hint is not None:
            return f"unknown key (did you mean {hint!r}?)"
        return f"unknown key; expected one of {_quoted(known)}"
