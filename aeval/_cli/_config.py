"""Reading, validating and resolving the configuration file of ``aeval run``."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import yaml

from .._engine._http_target import DEFAULT_HTTP_TIMEOUT, HttpSpec
from .._exceptions import ConfigError
from .._samples._limits import yaml_limit_problem
from ..models._body import DEFAULT_MAX_RESPONSE_BYTES
from ._schema import PathPart, Problem, Validator, load_schema, render_path

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_FORMATS",
    "DEFAULT_OUTPUT_DIR",
    "ConfigError",
    "ErrorLimit",
    "HttpSpec",
    "RunConfig",
    "load_config",
]

DEFAULT_CONCURRENCY = 4
DEFAULT_FORMATS = ("markdown", "json", "junit")
DEFAULT_OUTPUT_DIR = "aeval-results"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True)
class ErrorLimit:
    """The most error rows a run may have (``max_errors``): a count, or a percent of the rows.

    Attributes:
        count: The most error rows, when given as a count.
        percent: The most error rows in percent of the rows, when given as ``"5%"``.
    """

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, value: int | str) -> ErrorLimit:
        """``3`` or ``"3"`` (a count), ``"5%"`` or ``"2.5%"`` (a percent of the rows).

        Raises:
            ValueError: Not a count >= 0 nor a percentage from 0 to 100.
        """
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise ValueError(f"expected a count >= 0 or a percentage like '5%', got {value!r}")
            return cls(count=value)
        text = str(value).strip()
        try:
            if text.endswith("%"):
                percent = float(text[:-1])
                if not 0 <= percent <= 100:
                    raise ValueError
                return cls(percent=percent)
            if not text.isdigit():
                raise ValueError
            return cls(count=int(text))
        except ValueError:
            raise ValueError(
                f"expected a count >= 0 or a percentage from 0% to 100% like '5%', got {text!r}"
            ) from None

    def exceeded(self, errors: int, rows: int) -> bool:
        """Whether ``errors`` error rows out of ``rows`` are more than allowed."""
        if self.count is not None:
            return errors > self.count
        assert self.percent is not None
        return rows > 0 and 100.0 * errors / rows > self.percent

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return f"{self.percent:g}%"


@dataclass(frozen=True, slots=True)
class RunConfig:
    """A validated configuration, with relative paths resolved.

    Attributes:
        path: The configuration file.
        samples: Sample sources: absolute paths or URLs (none in a configuration read for
            ``aeval rescore`` that gives none).
        tags: Keep only samples with one of these tags (all samples when empty).
        target: ``"module:function"`` or an :class:`HttpSpec`; ``None`` only in a
            configuration read for ``aeval rescore`` that gives none.
        strategies: The raw strategy entries, validated.
        concurrency: Samples in flight at once.
        timeout: Seconds per call of the target, ``None`` for no limit.
        repeats: Runs per sample.
        min_score: The smallest acceptable global score (percent), if any.
        tag_min_scores: The smallest acceptable score per tag (percent).
        min_kappa: The smallest acceptable kappa of each strategy against the human labels.
        max_errors: The most error rows the run may have, if limited.
        output_dir: Where reports and ``rows.jsonl`` are written.
        formats: Report formats.
        description: The configuration's ``description``.
        name: The run's name in the run store (``name``; default: the file's stem).
        labels: Labels kept with the run in the store.
        store: The run store's file, ``False`` to record nothing, ``None`` when the file
            does not say (the command line, ``AEVAL_STORE`` or the default decide).
        pythonpath: Folders put first on ``sys.path`` to import the target and strategies.
        tools: Where ``@aeval.tool`` functions get their results: ``"live"``, ``"fixtures"``
            or ``"replay:REF"`` (``None`` when the file does not say).
        conversation_timeout: Seconds per conversation, ``None`` for no limit.
        user_model: The chat model entry of the simulated users, ``None`` when absent.
        lines: Line numbers of the keys, for messages found after validation.
    """

    path: Path
    samples: tuple[str, ...]
    tags: tuple[str, ...]
    target: str | HttpSpec | None
    strategies: tuple[Mapping[str, Any], ...]
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = None
    repeats: int = 1
    min_score: float | None = None
    tag_min_scores: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    min_kappa: float | None = None
    max_errors: ErrorLimit | None = None
    output_dir: Path = Path(DEFAULT_OUTPUT_DIR)
    formats: tuple[str, ...] = DEFAULT_FORMATS
    description: str | None = None
    name: str | None = None
    labels: tuple[str, ...] = ()
    store: Path | Literal[False] | None = None
    pythonpath: tuple[Path, ...] = ()
    tools: str | None = None
    conversation_timeout: float | None = None
    user_model: Mapping[str, Any] | None = None
    lines: Mapping[tuple[PathPart, ...], int] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )

    @property
    def run_name(self) -> str:
        """The run's name: ``name``, or the file's name without its extension."""
        return self.name or self.path.stem

    @property
    def directory(self) -> Path:
        """The directory holding the configuration file."""
        return self.path.parent

    def error(self, key: Sequence[PathPart], message: str) -> ConfigError:
        """A :class:`ConfigError` at ``key``, with its line when known."""
        return ConfigError.at(self.path, render_path(key), message, line=self.line(key))

    def line(self, key: Sequence[PathPart]) -> int | None:
        """The line of ``key`` (or of its closest parent) in the file."""
        path = tuple(key)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with ``changes`` applied (used for command-line overrides)."""
        return dataclasses.replace(self, **changes)

    def overridden(self, flags: Mapping[str, Any]) -> RunConfig:
        """A copy with the settings of ``flags`` that were given (not ``None``) replaced; this
        configuration when none was."""
        changes = {setting: value for setting, value in flags.items() if value is not None}
        return self.replace(**changes) if changes else self


def _index_lines(node: yaml.Node, path: tuple[PathPart, ...], out: dict[Any, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                where = (*path, str(key_node.value))
                out[where] = key_node.start_mark.line + 1
                _index_lines(value_node, where, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            out[(*path, index)] = item.start_mark.line + 1
            _index_lines(item, (*path, index), out)


def _parse(path: Path) -> tuple[Any, dict[tuple[PathPart, ...], int]]:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, [f"{source}: the configuration file does not exist"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [f"{source}: cannot read the configuration: {exc}"]) from exc
    try:
        limit = yaml_limit_problem(yaml.SafeLoader(text))
        if limit is not None:
            raise ConfigError(source, [f"{source}:{limit.line}: {limit.message}"])
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = source if mark is None else f"{source}:{mark.line + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [f"{where}: not valid YAML: {problem}"]) from exc
    lines: dict[tuple[PathPart, ...], int] = {}
    if node is not None:
        _index_lines(node, (), lines)
    if data is None:
        raise ConfigError(source, [f"{source}: the configuration file is empty"])
    return data, lines


def _line_of(problem: Problem, lines: Mapping[tuple[PathPart, ...], int]) -> int | None:
    path = problem.path
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


def _resolve(base: Path, value: str) -> str:
    if _URL.match(value) is not None:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _strings(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _http(data: Mapping[str, Any]) -> HttpSpec:
    return HttpSpec(
        url=data["url"],
        method=data.get("method", "POST"),
        headers=MappingProxyType(dict(data.get("headers") or {})),
        body=data.get("body"),
        has_body="body" in data,
        response_path=data.get("response_path"),
        timeout=float(data.get("timeout", DEFAULT_HTTP_TIMEOUT)),
        accept_status=frozenset(data.get("accept_status") or ()),
        max_response_bytes=int(data.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)),
    )


def _tools(base: Path, tools: str | None) -> str | None:
    """``replay:PATH`` of a file next to the configuration resolved against its folder."""
    if tools is None or not tools.startswith("replay:"):
        return tools
    ref = tools.removeprefix("replay:")
    candidate = base / ref
    if ref.lower().endswith((".jsonl", ".json")) or candidate.is_file():
        return f"replay:{_resolve(base, ref)}"
    return tools


_RUN_ONLY = ("samples", "target")
"""The keys only ``aeval run`` needs: ``aeval rescore`` calls no target on no samples."""


def _rescore_schema() -> Mapping[str, Any]:
    schema = load_schema()
    return {**schema, "required": [key for key in schema["required"] if key not in _RUN_ONLY]}


def load_config(path: str | Path, *, rescore: bool = False) -> RunConfig:
    """Read, validate and resolve a configuration file.

    Args:
        path: The configuration file.
        rescore: Read it for ``aeval rescore``: ``samples`` and ``target`` may be left out
            (and are not used).

    Raises:
        ConfigError: The file is missing, is not YAML, or breaks the schema; every problem is
            listed with its line and key.
    """
    path = Path(path)
    data, lines = _parse(path)
    problems = Validator(_rescore_schema() if rescore else load_schema()).validate(data)
    if problems:
        raise ConfigError(
            str(path),
            [
                f"{path}:{line}: {problem}"
                if (line := _line_of(problem, lines))
                else f"{path}: {problem}"
                for problem in problems
            ],
        )
    base = path.resolve().parent
    samples = data.get("samples", ())
    tags: tuple[str, ...] = ()
    if isinstance(samples, dict):
        tags = tuple(samples.get("tags") or ())
        samples = samples["paths"]
    target = data.get("target")
    if isinstance(target, dict):
        target = _http(target["http"]) if "http" in target else target["function"]
    thresholds = data.get("thresholds") or {}
    output = data.get("output") or {}
    timeout = data.get("timeout")
    store = data.get("store")
    pythonpath = data.get("pythonpath") or ()
    max_errors = None
    if thresholds.get("max_errors") is not None:
        try:
            max_errors = ErrorLimit.parse(thresholds["max_errors"])
        except ValueError as exc:
            where = lines.get(("thresholds", "max_errors"))
            raise ConfigError.at(path, "thresholds.max_errors", str(exc), line=where) from None
    return RunConfig(
        path=path,
        samples=tuple(_resolve(base, source) for source in _strings(samples)),
        tags=tags,
        target=target,
        strategies=tuple(data["strategies"]),
        concurrency=data.get("concurrency", DEFAULT_CONCURRENCY),
        timeout=None if timeout is None else float(timeout),
        repeats=data.get("repeats", 1),
        min_score=thresholds.get("min_score"),
        tag_min_scores=MappingProxyType(dict(thresholds.get("tag_min_scores") or {})),
        min_kappa=thresholds.get("min_kappa"),
        max_errors=max_errors,
        output_dir=Path(_resolve(base, output["dir"]))
        if "dir" in output
        else Path(DEFAULT_OUTPUT_DIR),
        formats=tuple(output.get("formats", DEFAULT_FORMATS)),
        description=data.get("description"),
        name=data.get("name"),
        labels=tuple(dict.fromkeys(data.get("labels") or ())),
        store=store if store is None or store is False else Path(_resolve(base, store)),
        pythonpath=tuple(Path(_resolve(base, folder)) for folder in _strings(pythonpath)),
        tools=_tools(base, data.get("tools")),
        conversation_timeout=None
        if data.get("conversation_timeout") is None
        else float(data["conversation_timeout"]),
        user_model=data.get("user_model"),
        lines=MappingProxyType(lines),
    )
