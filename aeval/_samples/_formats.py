"""Sample files: the YAML, JSON and JSONL formats, parsed into samples with line numbers.

Every problem raises a :class:`~aeval.SampleLoadError` that names the source, the line, the
sample and what to change. YAML line numbers come from the composed node tree; JSON item
lines are found only when an error needs them, so valid files parse at orjson's speed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Any, Protocol

import orjson
import yaml

from .._exceptions import SampleLoadError
from ._agent_keys import AGENT_KEYS, CONTEXT_KEY, RELEVANT_IDS_KEY, read_agent_keys
from ._conversation_keys import (
    CONVERSATION_KEYS,
    check_conversation_metadata,
    read_conversation_keys,
)
from ._json_lines import JsonLines
from ._labels import LABEL_KEY, read_label
from ._limits import (
    LimitProblem,
    depth_message,
    may_nest_too_deep,
    too_deep,
    yaml_limit_problem,
)
from ._model import EvaluationSample, make_sample
from ._sources import JSONL_EXTENSIONS
from ._utf8 import BOM, decode_utf8, invalid_utf8_at, not_utf8

__all__ = [
    "BOM",
    "PARSERS",
    "SAMPLE_KEYS",
    "Parsed",
    "describe",
    "empty_error",
    "JsonlBatch",
    "format_of",
    "parse_jsonl_line",
    "parse_jsonl_lines",
]

_YAML_EXTENSIONS = (".yaml", ".yml")
_JSON_EXTENSIONS = (".json",)


def _yaml_loader() -> Any:
    """PyYAML's C loader when it is built, else the pure-Python one."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_ORJSON_DEPTH = "depth limit exceeded"

_SAMPLE_FORM = {
    "yaml": (
        '- name: greeting\n  parameters: ["Hello"]\n  expected-output: "Hi there"\n  tags: [smoke]'
    ),
    "json": '[{"name": "greeting", "parameters": ["Hello"], "expected-output": "Hi there"}]',
}
_KEY_TYPOS = {
    "parameters": ("parameter", "params", "param", "input", "inputs", "args"),
    "expected-output": (
        "expected_output",
        "expectedOutput",
        "expected",
        "output",
        "expected_outputs",
        "expectedOutputs",
    ),
}


class _Lines(Protocol):
    def label(self, index: int) -> str: ...

    def item(self, index: int) -> int | None: ...

    def key(self, index: int, key: str) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Parsed:
    """The samples of one source, with a way to find the line of each."""

    source: str
    samples: list[EvaluationSample]
    lines: _Lines | None = None

    def line(self, index: int) -> int | None:
        return None if self.lines is None else self.lines.item(index)

    def where(self, index: int) -> str:
        line = self.line(index)
        return self.source if line is None else f"{self.source}:{line}"


class _YamlLines:
    __slots__ = ("_nodes",)

    def __init__(self, nodes: list[yaml.Node]) -> None:
        self._nodes = nodes

    def label(self, index: int) -> str:
        return f"item {index + 1}"

    def item(self, index: int) -> int | None:
        return int(self._nodes[index].start_mark.line) + 1

    def key(self, index: int, key: str) -> int | None:
        node = self._nodes[index]
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                    return int(value_node.start_mark.line) + 1
        return self.item(index)


class _JsonlLines:
    __slots__ = ("_numbers",)

    def __init__(self, numbers: list[int]) -> None:
        self._numbers = numbers

    def label(self, index: int) -> str:
        return "the line"

    def item(self, index: int) -> int | None:
        return self._numbers[index]

    def key(self, index: int, key: str) -> int | None:
        return self._numbers[index]


def describe(value: Any) -> str:
    """Name a parsed value's type for an error message, e.g. ``a string ('hi')``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__} ({str(value)[:40]})"


TEXT_CHECK_KEYS = ("must-contain", "must-not-contain")
"""Per-sample text checks (seed 003's EvalCase), kept in the sample's metadata as
``must_contain`` / ``must_not_contain`` and read by ``ContainsStrategy``."""

SAMPLE_KEYS = (
    "name",
    "parameters",
    "expected-output",
    "expected-outputs",
    "tags",
    "metadata",
    LABEL_KEY,
    *TEXT_CHECK_KEYS,
    *AGENT_KEYS,
    CONTEXT_KEY,
    RELEVANT_IDS_KEY,
    *CONVERSATION_KEYS,
)
"""Every key a sample of a YAML, JSON or JSONL file may have, in the order messages list
them. Any other key is refused (custom fields go under ``metadata``); a new key is added
here and read in ``_build_into``."""

_SAMPLE_KEY_SET = frozenset(SAMPLE_KEYS)
_UNNAMED = tuple((None,) * count for count in range(8))
"""The names of up to 7 unnamed parameters, one tuple a count: samples share it, so a
worker that checked one sample's names against the function knows the next's by identity."""

_USUAL_KEYS = frozenset(("name", "parameters", "expected-output", "tags", "metadata"))
"""The keys most items of a large file have, all read first; any other key of
:data:`SAMPLE_KEYS` is read by ``_other_keys`` when an item has one."""
_CONVERSATION_METADATA = frozenset(("turns", "simulated_user"))
"""The metadata keys a conversation is kept under (refused in a file's metadata)."""
_MISSING: Any = object()
_NAME_FIX = "give every sample a unique, non-blank name"
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_CAMEL_HUMP = r"(?<=[a-z0-9])(?=[A-Z])"


def _suggestion(key: str) -> str | None:
    """The sample key that ``key`` was probably meant to be (only a bad sample asks, so
    difflib and the pattern load then)."""
    import difflib

    spelled = re.sub(_CAMEL_HUMP, "-", key).replace("_", "-").replace(" ", "-").lower()
    if spelled in SAMPLE_KEYS:
        return spelled
    for typo_of, typos in _KEY_TYPOS.items():
        if key in typos:
            return typo_of
    close = difflib.get_close_matches(spelled, SAMPLE_KEYS, n=1, cutoff=0.6)
    return close[0] if close else None


def _unknown_keys_reason(unknown: list[Any]) -> str:
    parts = []
    for key in unknown:
        shown = repr(key) if isinstance(key, str) else describe(key)
        guess = _suggestion(key) if isinstance(key, str) else None
        parts.append(shown if guess is None else f"{shown} (did you mean {guess!r}?)")
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    noun, them = ("key", "it") if len(parts) == 1 else ("keys", "them")
    return (
        f"unknown {noun} {listed}: a sample has only the keys {', '.join(SAMPLE_KEYS)}; "
        f"rename {them}, or put custom fields under 'metadata:' (metadata: {{owner: support}})"
    )


def _typo_hint(item: Mapping[Any, Any], key: str) -> str:
    for typo in _KEY_TYPOS.get(key, ()):
        if typo in item:
            return f" (found {typo!r}: the key is spelled {key!r})"
    return ""


class _Fail(Protocol):
    """:func:`_fail` with one file's lines and source bound: ``partial(_fail, lines, source)``,
    made once per file or batch of lines, not per item."""

    def __call__(
        self, index: int, reason: str, key: str | None = None, sample: str | None = None
    ) -> SampleLoadError: ...


def _fail(
    lines: _Lines,
    source: str,
    index: int,
    reason: str,
    key: str | None = None,
    sample: str | None = None,
) -> SampleLoadError:
    """The error of item ``index`` of ``source``, naming the line of the item (or of its
    ``key``)."""
    line = lines.item(index) if key is None else lines.key(index, key)
    return SampleLoadError(reason, source=source, line=line, sample=sample)


def _build_into(
    items: Iterable[Any], out: list[EvaluationSample], lines: _Lines, fail: _Fail
) -> None:
    """Append the sample of each of ``items`` to ``out``, the ``n``-th sample of ``out``
    being item ``n`` of ``lines``: the one sample builder of every file format, whose loop
    runs once per line of a large file.

    It reads an item's usual keys (:data:`_USUAL_KEYS`) first; the other keys of
    :data:`SAMPLE_KEYS` are read only when the item has one (or its metadata holds a
    conversation's key, which is refused). Each sample is the one ``EvaluationSample(name,
    parameters, expected_output, tags=..., metadata=...)`` builds, made without checking
    again what was checked here (:func:`make_sample`). ``fail`` (``partial(_fail, lines,
    source)``, bound by the caller once per file or batch) makes the error of a bad item.

    Raises:
        SampleLoadError: An item is not a valid sample, named with its line (the samples of
            the items before it are in ``out``).
    """
    append = out.append
    index = len(out)
    for item in items:
        if type(item) is not dict and not isinstance(item, Mapping):
            raise fail(
                index,
                f"{lines.label(index)} is {describe(item)}, not a mapping: each sample is a "
                "mapping with 'name', 'parameters' and 'expected-output'",
            )
        get = item.get
        name = get("name")
        if type(name) is not str and not isinstance(name, str):
            if name is None:
                reason = f"{lines.label(index)} has no 'name': {_NAME_FIX}"
                raise fail(index, reason)
            raise fail(
                index,
                f"{lines.label(index)} has a 'name' that is {describe(name)}: write the name as a "
                f'string, e.g. name: "{name}"',
                "name",
            )
        if not name.strip():
            reason = f"{lines.label(index)} has a blank 'name': {_NAME_FIX}"
            raise fail(index, reason)

        parameters = get("parameters", _MISSING)
        if parameters is _MISSING:
            if not any(key in item for key in CONVERSATION_KEYS):
                raise fail(
                    index,
                    "no 'parameters'"
                    + _typo_hint(item, "parameters")
                    + ': add a list of values (parameters: ["..."]) or a mapping of named values',
                    sample=name,
                )
            parameters = []
        if type(parameters) is list:
            values = tuple(parameters)
            count = len(values)
            names: tuple[str | None, ...] = _UNNAMED[count] if count < 8 else (None,) * count
        elif isinstance(parameters, Mapping):
            for key in parameters:
                if type(key) is not str and not isinstance(key, str):
                    raise fail(
                        index,
                        f"parameter names must be strings, got {describe(key)}: quote the name",
                        "parameters",
                        name,
                    )
            values, names = tuple(parameters.values()), tuple(parameters)
        elif isinstance(parameters, list):
            values = tuple(parameters)
            count = len(values)
            names = _UNNAMED[count] if count < 8 else (None,) * count
        else:
            raise fail(
                index,
                "'parameters' must be a list (unnamed values) or a mapping (named values), got "
                f'{describe(parameters)}: write parameters: ["..."] (or [] for none)',
                "parameters",
                name,
            )

        usual = item.keys() <= _USUAL_KEYS
        expected = get("expected-output")
        if not usual:
            expected = _expected_outputs(item, expected, index, fail, name)

        tags = get("tags")
        if tags is None:
            tags = ()
        elif not isinstance(tags, list):
            raise fail(
                index,
                f"'tags' must be a list of strings, got {describe(tags)}: write tags: [\"smoke\"]",
                "tags",
                name,
            )
        else:
            for position, tag in enumerate(tags, start=1):
                if type(tag) is not str and not isinstance(tag, str):
                    raise fail(
                        index,
                        f"'tags' must be a list of strings, but tag {position} is "
                        f'{describe(tag)}: quote it, e.g. "{tag}"',
                        "tags",
                        name,
                    )
            tags = tuple(tags)

        metadata = get("metadata")
        if metadata is not None:
            if type(metadata) is not dict and not isinstance(metadata, Mapping):
                raise fail(
                    index,
                    f"'metadata' must be a mapping, got {describe(metadata)}: write "
                    "metadata: {key: value}",
                    "metadata",
                    name,
                )
            usual = usual and _CONVERSATION_METADATA.isdisjoint(metadata)
        if not usual:
            metadata = _other_keys(item, metadata, index, fail, name)
        if metadata is None:
            entries: Mapping[str, Any] = _EMPTY
        else:
            entries = dict(metadata)
            if not _CONVERSATION_METADATA.isdisjoint(entries):
                check_conversation_metadata(name, entries)
            entries = MappingProxyType(entries)
        append(make_sample(name, values, names, expected, tags, entries))
        index += 1


def _expected_outputs(
    item: Mapping[Any, Any], expected: Any, index: int, fail: _Fail, name: str
) -> Any:
    """The expected output of an item with a key besides the usual ones: its
    ``expected-output`` or its ``expected-outputs``."""
    expected_list = item.get("expected-outputs")
    if expected is not None and expected_list is not None:
        raise fail(
            index,
            "has both 'expected-output' and 'expected-outputs': use one of them, not both",
            "expected-outputs",
            name,
        )
    if expected_list is not None:
        if not isinstance(expected_list, list):
            raise fail(
                index,
                f"'expected-outputs' must be a list, got {describe(expected_list)}: write "
                "expected-outputs: [\"...\"], or use 'expected-output' for a single value",
                "expected-outputs",
                name,
            )
        return expected_list
    if expected is None and (hint := _typo_hint(item, "expected-output")):
        raise fail(
            index,
            f"no expected output{hint}: add 'expected-output' (one value) or "
            "'expected-outputs' (a list of values)",
            sample=name,
        )
    return expected


def _other_keys(
    item: Mapping[Any, Any],
    metadata: Mapping[str, Any] | None,
    index: int,
    fail: _Fail,
    name: str,
) -> Mapping[str, Any] | None:
    """The metadata of an item with a key besides the usual ones (or a conversation's key
    in its metadata): its own, with what the text checks, the agent keys, the
    conversation keys and the label add; or the error naming the first problem."""
    checks: dict[str, list[str]] = {}
    for key in TEXT_CHECK_KEYS:
        value = item.get(key)
        if value is None:
            continue
        texts = [value] if isinstance(value, str) else value
        if not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts):
            raise fail(
                index,
                f"'{key}' must be a text or a list of non-empty texts, got {describe(value)}: "
                f'write {key}: ["..."]',
                key,
                name,
            )
        checks[key.replace("-", "_")] = texts
    agent, problem, at = read_agent_keys(item)
    if problem is None:
        conversation, problem, at = read_conversation_keys(item)
        agent.update(conversation)
    if problem is not None:
        raise fail(index, problem, at, name)
    if checks or agent:
        metadata = {**(metadata or {}), **checks, **agent}
    human = item.get(LABEL_KEY)
    if human is not None:
        verdict = read_label(human)
        if verdict is None:
            raise fail(
                index,
                f"'label' must be pass or fail (or a human score between 0 and 1), got "
                f"{describe(human)}: write label: pass",
                LABEL_KEY,
                name,
            )
        if not isinstance(human, int | float) or isinstance(human, bool):
            human = "pass" if verdict else "fail"
        metadata = {**(metadata or {}), LABEL_KEY: human}
    unknown = [key for key in item if key not in _SAMPLE_KEY_SET]
    if unknown:
        first = unknown[0]
        reason = _unknown_keys_reason(unknown)
        raise fail(index, reason, first if isinstance(first, str) else None, name)
    return metadata


def _build_all(document: list[Any], source: str, lines: _Lines) -> list[EvaluationSample]:
    samples: list[EvaluationSample] = []
    _build_into(document, samples, lines, partial(_fail, lines, source))
    return samples


def empty_error(source: str, fmt: str) -> SampleLoadError:
    """The error for a file with no samples in it."""
    expected = "one sample object per line" if fmt == "jsonl" else "a list of samples"
    return SampleLoadError(f"file is empty: expected {expected}", source=source)


def _top_level_error(value: Any, source: str, fmt: str, line: int | None) -> SampleLoadError:
    kind = "YAML" if fmt == "yaml" else "JSON"
    return SampleLoadError(
        f"the top level is {describe(value)}, but it must be a {kind} list of samples; "
        f"write it in this form:\n{_SAMPLE_FORM[fmt]}",
        source=source,
        line=line,
    )


def _check_yaml_limits(text: str, source: str) -> None:
    try:
        problem = _limit_problem(_yaml_loader(), text)
    except yaml.YAMLError as exc:
        if _yaml_loader() is yaml.SafeLoader:
            raise
        # libyaml refuses deep flow nesting with a limit (and words) of its own while it
        # scans ahead, before aeval sees a single event. The pure-Python scanner has no
        # such limit, so it finds aeval's limit, if the document passes one first; any
        # other problem is told in libyaml's words, as it would be without the fallback.
        try:
            problem = _limit_problem(yaml.SafeLoader, text)
        except yaml.YAMLError:
            problem = None
        if problem is None:
            raise exc from None
    if problem is not None:
        raise SampleLoadError(problem.message, source=source, line=problem.line)


def _limit_problem(loader_class: Any, text: str) -> LimitProblem | None:
    loader = loader_class(text)
    try:
        return yaml_limit_problem(loader)
    finally:
        loader.dispose()


def _parse_yaml(data: bytes, source: str) -> Parsed:
    text = decode_utf8(data, source)
    loader = _yaml_loader()(text)
    try:
        _check_yaml_limits(text, source)
        root = loader.get_single_node()
        document = None if root is None else loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        raise _yaml_error(exc, source) from exc
    except yaml.YAMLError as exc:
        raise SampleLoadError(f"invalid YAML: {exc}", source=source) from exc
    finally:
        loader.dispose()
    if document is None:
        raise empty_error(source, "yaml")
    if not isinstance(document, list):
        raise _top_level_error(document, source, "yaml", int(root.start_mark.line) + 1)
    lines = _YamlLines(root.value)
    return Parsed(source, _build_all(document, source, lines), lines)


def _yaml_error(exc: yaml.MarkedYAMLError, source: str) -> SampleLoadError:
    mark = exc.problem_mark or exc.context_mark
    reason = f"invalid YAML: {exc.problem or exc.context}"
    line = None
    if mark is not None:
        line = int(mark.line) + 1
        reason = f"invalid YAML at line {line}, column {int(mark.column) + 1}: {exc.problem}"
        if exc.context and exc.context_mark is not None:
            reason += (
                f" ({exc.context} at line {int(exc.context_mark.line) + 1}, "
                f"column {int(exc.context_mark.column) + 1})"
            )
    return SampleLoadError(reason + "; fix the syntax there", source=source, line=line)


def _parse_json(file: bytes, source: str) -> Parsed:
    data = file.removeprefix(BOM)
    if not data.strip():
        raise empty_error(source, "json")
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        position = invalid_utf8_at(file)
        if position is not None:
            raise not_utf8(file, position, source) from exc
        if exc.msg.startswith(_ORJSON_DEPTH):
            reason = depth_message("the document", f"line {exc.lineno}, column {exc.colno}")
        else:
            reason = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; "
            reason += "fix the syntax there"
        raise SampleLoadError(reason, source=source, line=exc.lineno) from exc
    if not isinstance(document, list):
        start = len(data) - len(data.lstrip())
        line = data.count(b"\n", 0, start) + 1
        raise _top_level_error(document, source, "json", line)
    lines = JsonLines(data)
    samples = _build_all(document, source, lines)
    if too_deep(document):
        index = next(i for i, item in enumerate(document) if too_deep(item, 2))
        raise SampleLoadError(
            depth_message(lines.label(index)), source=source, line=lines.item(index)
        )
    return Parsed(source, samples, lines)


def _jsonl_item(raw: bytes, number: int, source: str, offset: int) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        position = invalid_utf8_at(raw)
        if position is not None:
            raise not_utf8(raw, position, source, first_line=number, offset=offset) from exc
        if exc.msg.startswith(_ORJSON_DEPTH):
            reason = depth_message("the line", f"column {exc.colno}")
        else:
            reason = f"invalid JSON at column {exc.colno}: {exc.msg}; write one sample object "
            reason += "per line"
        raise SampleLoadError(reason, source=source, line=number) from exc


def _deep_line_error(source: str, number: int) -> SampleLoadError:
    return SampleLoadError(depth_message("the line"), source=source, line=number)


def parse_jsonl_line(raw: bytes, number: int, source: str, *, offset: int) -> EvaluationSample:
    """Parse one non-blank JSONL line into a sample.

    Args:
        raw: The line, without its newline.
        number: The line's 1-based number.
        source: The file, for messages.
        offset: Where the line starts in the file, to locate a byte that is not UTF-8.
    """
    item = _jsonl_item(raw, number, source, offset)
    if too_deep(item):
        raise _deep_line_error(source, number)
    return _build_all([item], source, _JsonlLines([number]))[0]


@dataclass(frozen=True, slots=True)
class JsonlBatch:
    """The samples of consecutive JSONL lines, up to the first problem.

    Attributes:
        samples: The samples of the lines before the first problem, in order.
        numbers: The line number of each sample.
        error: The first problem, which names its line; ``None`` when there is none.
    """

    samples: list[EvaluationSample]
    numbers: list[int]
    error: SampleLoadError | None = None


_TOGETHER = 16
"""Lines parsed and built together: a whole file's dicts are not held at once, and the few
held stay well under the cycle collector's young-generation threshold while a stream's
samples wait for a worker (64 at a time made a 20,000-sample stream trigger 10-16
collections instead of 8-9; ``tests/test_streaming.py`` counts them). Building 64 at a time
would save about 1.4k instructions a usual line."""


def parse_jsonl_lines(lines: list[bytes], number: int, source: str, offset: int) -> JsonlBatch:
    """Parse consecutive JSONL lines (blank ones skipped) into samples.

    The lines are parsed and their depth checked :data:`_TOGETHER` at a time; each item is
    built by the one builder, :func:`_build_into`. At the first problem (or a blank line)
    they are parsed again one at a time, which finds it with its line, column and message.

    Args:
        lines: The lines, without their newlines.
        number: The 1-based number of the first line.
        source: The file, for messages.
        offset: Where the first line starts in the file, to locate a byte that is not UTF-8.
    """
    loads = orjson.loads
    samples: list[EvaluationSample] = []
    numbered = _JsonlLines(list(range(number, number + len(lines))))  # no line is blank here
    fail: _Fail = partial(_fail, numbered, source)
    for start in range(0, len(lines), _TOGETHER):
        some = lines[start : start + _TOGETHER]
        try:
            parsed = list(map(loads, some))
        except orjson.JSONDecodeError:
            return _parse_one_by_one(lines, number, source, offset)
        if may_nest_too_deep(some) and too_deep(parsed, 0):
            return _parse_one_by_one(lines, number, source, offset)
        try:
            _build_into(parsed, samples, numbered, fail)
        except SampleLoadError as exc:
            return JsonlBatch(samples, list(range(number, number + len(samples))), exc)
    return JsonlBatch(samples, list(range(number, number + len(lines))))


def _parse_one_by_one(lines: list[bytes], number: int, source: str, offset: int) -> JsonlBatch:
    samples: list[EvaluationSample] = []
    numbers: list[int] = []
    try:
        for raw in lines:
            if raw.strip():
                samples.append(parse_jsonl_line(raw, number, source, offset=offset))
                numbers.append(number)
            number += 1
            offset += len(raw) + 1
    except SampleLoadError as exc:
        return JsonlBatch(samples, numbers, exc)
    return JsonlBatch(samples, numbers)


def _parse_jsonl(data: bytes, source: str) -> Parsed:
    offset = len(BOM) if data.startswith(BOM) else 0
    lines = data[offset:].split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    batch = parse_jsonl_lines(lines, 1, source, offset)
    if batch.error is not None:
        raise batch.error
    if not batch.samples:
        raise empty_error(source, "jsonl")
    return Parsed(source, batch.samples, _JsonlLines(batch.numbers))


PARSERS: dict[str, Callable[[bytes, str], Parsed]] = {  # format -> parse(data, source)
    "yaml": _parse_yaml,
    "json": _parse_json,
    "jsonl": _parse_jsonl,
}


def format_of(path: str) -> str | None:
    """The format (``yaml``, ``json``, ``jsonl``) a path's extension names, any case."""
    suffix = PurePosixPath(path.replace("\\", "/")).suffix.lower()
    if suffix in _YAML_EXTENSIONS:
        return "yaml"
    if suffix in _JSON_EXTENSIONS:
        return "json"
    if suffix in JSONL_EXTENSIONS:
        return "jsonl"
    return None
