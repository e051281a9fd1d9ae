"""Limits on the structure of input documents: sample files and the configuration file.

A small YAML file can expand to billions of nodes through nested aliases ("billion
laughs"), and a deeply nested document overflows the stack of the recursive YAML composer
(libyaml's crashes the process) and of everything that walks the data later (Python's
recursion limit, orjson's 254 levels when rows are written). So before a YAML document is
composed, :func:`yaml_limit_problem` replays the parser's events, which needs no recursion,
and stops at the first limit passed; parsed JSON values are checked with
:func:`too_deep`.

Attributes:
    MAX_NESTING_DEPTH: The deepest nesting of lists and mappings accepted, counting the
        top level of the document (the list of samples, or one JSONL line's object) as 1.
    MAX_YAML_ALIAS_NODES: How many nodes YAML aliases may add to a document once expanded
        (an alias of a 10-node list used 3 times adds 30). Documents without aliases are
        not limited.
    MAX_YAML_ALIAS_TEXT: How many characters of text YAML aliases may add to a document
        once expanded (an alias of a 1,000-character string used 3 times adds 3,000): one
        alias of a large string is one node, but every row and report writes it out again.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from operator import add
from typing import Any

__all__ = [
    "MAX_NESTING_DEPTH",
    "MAX_YAML_ALIAS_NODES",
    "MAX_YAML_ALIAS_TEXT",
    "LimitProblem",
    "depth_message",
    "may_nest_too_deep",
    "too_deep",
    "yaml_limit_problem",
]

MAX_NESTING_DEPTH = 100
MAX_YAML_ALIAS_NODES = 1_000_000
MAX_YAML_ALIAS_TEXT = 10_000_000

_CONTAINERS = (list, dict)


@dataclass(frozen=True, slots=True)
class LimitProblem:
    """A limit a document passes: where (1-based line) and what to change."""

    line: int
    message: str


def depth_message(subject: str, where: str | None = None) -> str:
    """The message for ``subject`` nesting deeper than :data:`MAX_NESTING_DEPTH`."""
    at = "" if where is None else f" ({where})"
    return (
        f"{subject} nests deeper than {MAX_NESTING_DEPTH} levels of lists and mappings{at}: "
        f"flatten the data; aeval reads at most {MAX_NESTING_DEPTH} levels"
    )


def _at(mark: Any) -> tuple[int, str]:
    line = int(mark.line) + 1
    return line, f"line {line}, column {int(mark.column) + 1}"


class _Frame:
    __slots__ = ("anchor", "height", "size", "text")

    def __init__(self, anchor: str | None) -> None:
        self.anchor = anchor
        self.size = 1
        self.height = 1
        self.text = 0


def yaml_limit_problem(loader: Any) -> LimitProblem | None:
    """Consume the events of ``loader`` and return the first limit the document passes.

    ``loader`` is a fresh PyYAML loader (``SafeLoader`` or ``CSafeLoader``) over the text;
    compose the document with another one. Syntax errors propagate as ``yaml.YAMLError``;
    other composition errors (an undefined alias, a second document) are left to the
    composer, which reports them with their marks.
    """
    anchors: dict[str, tuple[int, int, int]] = {}
    stack: list[_Frame] = []
    added = 0
    added_text = 0
    while True:
        event = loader.get_event()
        # by name, not identity: the event classes are those of the loader's own yaml module
        kind = type(event).__name__
        if event is None or kind == "StreamEndEvent":
            return None
        if kind == "ScalarEvent":
            length = len(event.value)
            if event.anchor is not None:
                anchors[event.anchor] = (1, 0, length)
            if stack:
                stack[-1].size += 1
                stack[-1].text += length
            continue
        if kind in ("SequenceStartEvent", "MappingStartEvent"):
            if len(stack) >= MAX_NESTING_DEPTH:
                line, where = _at(event.start_mark)
                return LimitProblem(line, depth_message("the document", where))
            stack.append(_Frame(event.anchor))
            continue
        if kind in ("SequenceEndEvent", "MappingEndEvent"):
            frame = stack.pop()
            size, height, text = frame.size, frame.height, frame.text
            if frame.anchor is not None:
                anchors[frame.anchor] = (size, height, text)
        elif kind == "AliasEvent":
            line, where = _at(event.start_mark)
            found = anchors.get(event.anchor)
            if found is None:
                if any(frame.anchor == event.anchor for frame in stack):
                    return LimitProblem(
                        line,
                        f"the alias *{event.anchor} ({where}) refers to a collection that "
                        "contains it: recursive data cannot be evaluated; remove the alias",
                    )
                continue
            size, height, text = found
            added += size
            added_text += text
            if added > MAX_YAML_ALIAS_NODES:
                return LimitProblem(
                    line,
                    f"YAML aliases expand the document by more than {MAX_YAML_ALIAS_NODES:,} "
                    f"nodes (passed at the alias *{event.anchor}, {where}): write the "
                    "repeated values out, or nest fewer aliases inside aliases",
                )
            if added_text > MAX_YAML_ALIAS_TEXT:
                return LimitProblem(
                    line,
                    "YAML aliases expand the document by more than "
                    f"{MAX_YAML_ALIAS_TEXT:,} characters of text (passed at the alias "
                    f"*{event.anchor}, {where}, which repeats {text:,}): use the long text "
                    "fewer times, or keep it in a file the function under test reads",
                )
            if len(stack) + height > MAX_NESTING_DEPTH:
                return LimitProblem(
                    line, depth_message("the document", f"through the alias at {where}")
                )
        else:
            continue
        if stack:
            parent = stack[-1]
            parent.size += size
            parent.height = max(parent.height, height + 1)
            parent.text += text


_SHORTEST_TOO_DEEP = 2 * (MAX_NESTING_DEPTH + 1)
"""The length of the shortest JSON text nesting deeper than :data:`MAX_NESTING_DEPTH`."""


def too_deep(value: Any, depth: int = 1) -> bool:
    """Whether ``value``, at nesting level ``depth``, nests lists and dicts too deeply.

    Iterative, so any depth can be checked; it visits each list and dict once, level by level.
    """
    level = [value] if type(value) in _CONTAINERS else []
    while level:
        if depth > MAX_NESTING_DEPTH:
            return True
        below = []
        for item in level:
            for child in item.values() if type(item) is dict else item:
                if type(child) in _CONTAINERS:
                    below.append(child)
        level = below
        depth += 1
    return False


def may_nest_too_deep(lines: list[bytes]) -> bool:
    """Whether a JSON text of ``lines`` may nest deeper than :data:`MAX_NESTING_DEPTH`.

    A valid line cannot nest deeper than it has ``[`` and ``{`` (nor deeper than half its
    length, as each opens and closes), and counting them is much cheaper than walking the
    parsed values (:func:`too_deep`), which only the lines with more need. An invalid line
    is the parser's to refuse.
    """
    if max(map(len, lines), default=0) < _SHORTEST_TOO_DEEP:
        return False
    count = bytes.count
    opened = map(add, map(count, lines, repeat(b"[")), map(count, lines, repeat(b"{")))
    return max(opened, default=0) > MAX_NESTING_DEPTH
