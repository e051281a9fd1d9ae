"""Samples: the inputs of an evaluation."""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from os import PathLike

    from .._conversation import ScriptedTurn, SimulatedUser

__all__ = [
    "EvaluationSample",
    "Parameters",
    "Samples",
    "make_sample",
]

_MISSING: Any = object()


class Parameters:
    """The parameters given to the function under test, positional and optionally named.

    Built from a list (unnamed values), a mapping (named values) or another ``Parameters``.
    Index access counts named and unnamed entries alike; ``get(name)`` finds the first entry
    with that name. Instances are immutable.

    Example:
        >>> params = Parameters({"question": "Hi?", "lang": "en"})
        >>> params[0], params.get("lang"), len(params)
        ('Hi?', 'en', 2)
    """

    __slots__ = ("_names", "_values")

    _values: tuple[Any, ...]
    _names: tuple[str | None, ...]

    def __init__(self, values: Iterable[Any] | Mapping[str, Any] | Parameters = ()) -> None:
        if isinstance(values, Parameters):
            self._values, self._names = values._values, values._names
        elif isinstance(values, Mapping):
            for name in values:
                if not isinstance(name, str):
                    raise TypeError(f"Parameter names must be strings, got {name!r}")
            self._values = tuple(values.values())
            self._names = tuple(values.keys())
        elif isinstance(values, str | bytes):
            raise TypeError(
                "Parameters takes a list or a mapping of values, not a single string: "
                f"write [{values!r}]"
            )
        else:
            self._values = tuple(values)
            self._names = (None,) * len(self._values)

    @classmethod
    def of(cls, *values: Any, **named: Any) -> Parameters:
        """Build parameters from positional (unnamed) then keyword (named) values."""
        params = cls(values)
        if named:
            params = params.with_named(**named)
        return params

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str | None, Any]]) -> Parameters:
        """Build parameters from ``(name, value)`` pairs; a ``None`` name is unnamed."""
        items = tuple(pairs)
        params = cls()
        params._names = tuple(name for name, _ in items)
        params._values = tuple(value for _, value in items)
        return params

    def with_named(self, **named: Any) -> Parameters:
        """Return a copy with named parameters appended."""
        new = Parameters(self)
        new._values = self._values + tuple(named.values())
        new._names = self._names + tuple(named.keys())
        return new

    if TYPE_CHECKING:

        @property
        def names(self) -> tuple[str | None, ...]:
            """The name of each entry, ``None`` for an unnamed one."""

        @property
        def values(self) -> tuple[Any, ...]:
            """The values, in order."""

    else:  # read by the engine for every sample: properties without a Python frame
        names = property(
            attrgetter("_names"), doc="The name of each entry, ``None`` for an unnamed one."
        )
        values = property(attrgetter("_values"), doc="The values, in order.")

        def __getattr__(self, name: str) -> Any:
            """Name aeval and the fix when code expecting a value gets the Parameters (a
            function under test asking for them passes them on, to an agent framework)."""
            if name.startswith("_"):
                raise AttributeError(
                    f"'Parameters' object has no attribute {name!r}", name=name, obj=self
                )
            raise AttributeError(
                f"'Parameters' object has no attribute {name!r}: this is aeval's Parameters, "
                "the parameters of a sample, which aeval passes whole to a function under "
                "test whose first parameter is named `params` or annotated `Parameters`. "
                'Read a value with params[0] or params.get("name"), or give the function a '
                "parameter of its own per value (`async def chat(question: str)`) to "
                "receive the values themselves",
                name=name,
                obj=self,
            )

    def as_dict(self) -> dict[str, Any]:
        """The named entries as a dict (first occurrence of a name wins)."""
        out: dict[str, Any] = {}
        for name, value in zip(self._names, self._values, strict=True):
            if name is not None and name not in out:
                out[name] = value
        return out

    def _index(self, index: int) -> Any:
        if index < 0 or index >= len(self._values):
            raise IndexError(
                f"Parameter index {index} out of range: there are {len(self._values)} parameters"
            )
        return self._values[index]

    def _named(self, name: str) -> Any:
        for entry_name, value in zip(self._names, self._values, strict=True):
            if entry_name == name:
                return value
        raise KeyError(f"Parameter not found: {name}")

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._named(key)
        if isinstance(key, bool) or not isinstance(key, int):
            raise TypeError(f"Parameters are indexed by int or str, not {type(key).__name__}")
        return self._index(key)

    def get(self, key: int | str, default: Any = _MISSING) -> Any:
        """Return the parameter at an index or with a name.

        Args:
            key: A position (0-based, counting named and unnamed entries) or a name.
            default: Returned when the parameter is absent; without it a missing parameter
                raises ``IndexError`` (position) or ``KeyError`` (name).
        """
        try:
            return self[key]
        except (IndexError, KeyError):
            if default is _MISSING:
                raise
            return default

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __bool__(self) -> bool:
        return bool(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Parameters):
            return self._values == other._values and self._names == other._names
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._names, len(self._values)))

    def __repr__(self) -> str:
        if any(name is not None for name in self._names):
            parts = [
                repr(value) if name is None else f"{name}={value!r}"
                for name, value in zip(self._names, self._values, strict=True)
            ]
            return f"Parameters({', '.join(parts)})"
        return f"Parameters({list(self._values)!r})"


ParametersTypes = Parameters | Sequence[Any] | Mapping[str, Any]


@dataclass(frozen=True, slots=True, init=False)
class EvaluationSample:
    """One case to evaluate: the input parameters and the expected output.

    Attributes:
        name: A unique, non-blank name; it identifies the sample in reports.
        parameters: What the function under test receives. A list becomes unnamed
            parameters, a mapping named ones.
        expected_output: The reference answer; a value or a list of acceptable values.
        tags: Labels used to filter samples and to break scores down.
        metadata: Free-form data carried into the report.

    A conversation sample is built with ``turns=`` (the user messages of a scripted
    conversation, each a ``str`` or an :class:`~aeval.ScriptedTurn` with its own
    expectations) or ``user=`` (an :class:`~aeval.SimulatedUser`); both are kept in
    ``metadata`` (keys ``turns`` and ``simulated_user``) and read back by :attr:`turns` and
    :attr:`user`.
    """

    name: str
    parameters: Parameters = field(default_factory=Parameters)
    expected_output: Any = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __init__(
        self,
        name: str,
        parameters: ParametersTypes = (),
        expected_output: Any = None,
        *,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        turns: Iterable[str | ScriptedTurn] | None = None,
        user: SimulatedUser | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"Sample name must be a non-blank string, got {name!r}")
        if isinstance(tags, str):
            tags = (tags,)
        tags = tuple(tags)
        for tag in tags:
            if not isinstance(tag, str):
                raise TypeError(f"Sample {name!r}: tags must be strings, got {tag!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "parameters", Parameters(parameters))
        object.__setattr__(self, "expected_output", expected_output)
        object.__setattr__(self, "tags", tags)
        entries = dict(metadata or {})
        if turns is not None or user is not None:
            from ._conversation_keys import conversation_metadata

            entries.update(conversation_metadata(name, turns, user))
        elif "turns" in entries or "simulated_user" in entries:
            from ._conversation_keys import check_conversation_metadata

            check_conversation_metadata(name, entries)
        object.__setattr__(self, "metadata", MappingProxyType(entries))

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def turns(self) -> tuple[ScriptedTurn, ...]:
        """The user turns of a scripted conversation, empty for any other sample."""
        from ._conversation_keys import scripted_turns

        return scripted_turns(self.metadata)

    @property
    def user(self) -> SimulatedUser | None:
        """The simulated user of a simulated conversation, else ``None``."""
        from ._conversation_keys import simulated_user

        return simulated_user(self.metadata)

    @property
    def is_conversation(self) -> bool:
        """Whether this sample is a conversation (``turns`` or ``user``)."""
        metadata = self.metadata
        return "turns" in metadata or "simulated_user" in metadata

    def has_any_tag(self, tags: Iterable[str]) -> bool:
        """Whether the sample carries at least one of ``tags``."""
        return any(tag in self.tags for tag in tags)


_new = object.__new__

_set_name = EvaluationSample.__dict__["name"].__set__
_set_parameters = EvaluationSample.__dict__["parameters"].__set__
_set_expected_output = EvaluationSample.__dict__["expected_output"].__set__
_set_tags = EvaluationSample.__dict__["tags"].__set__
_set_metadata = EvaluationSample.__dict__["metadata"].__set__


def make_sample(
    name: str,
    values: tuple[Any, ...],
    names: tuple[str | None, ...],
    expected_output: Any,
    tags: tuple[str, ...],
    metadata: Mapping[str, Any],
) -> EvaluationSample:
    """``EvaluationSample`` of values already checked (its parameters' values and names,
    ``None`` for an unnamed one; tags as a tuple, metadata as a read-only mapping), without
    its ``__init__``'s checks: the one way the sample files build a sample once its keys
    are read."""
    parameters = _new(Parameters)
    parameters._values = values
    parameters._names = names
    sample: EvaluationSample = _new(EvaluationSample)
    _set_name(sample, name)
    _set_parameters(sample, parameters)
    _set_expected_output(sample, expected_output)
    _set_tags(sample, tags)
    _set_metadata(sample, metadata)
    return sample


class Samples(Sequence[EvaluationSample]):
    """An immutable, ordered collection of samples with unique names.

    Example:
        >>> samples = Samples([EvaluationSample("greet", ["Hi"], "Hello", tags=["smoke"])])
        >>> len(samples.filter_by_tags("smoke"))
        1
    """

    __slots__ = ("_samples",)

    def __init__(self, samples: Iterable[EvaluationSample] = ()) -> None:
        items = tuple(samples)
        seen: set[str] = set()
        for position, sample in enumerate(items):
            if not isinstance(sample, EvaluationSample):
                raise TypeError(
                    f"Samples holds EvaluationSample objects; item {position} is "
                    f"{type(sample).__name__}"
                )
            if sample.name in seen:
                raise ValueError(
                    f"Duplicate sample name {sample.name!r}: names identify rows in reports, "
                    "give each sample its own name"
                )
            seen.add(sample.name)
        self._samples = items

    @overload
    def __getitem__(self, index: int) -> EvaluationSample: ...

    @overload
    def __getitem__(self, index: slice) -> Samples: ...

    def __getitem__(self, index: int | slice) -> EvaluationSample | Samples:
        if isinstance(index, slice):
            return Samples(self._samples[index])
        return self._samples[index]

    def __len__(self) -> int:
        return len(self._samples)

    def __iter__(self) -> Iterator[EvaluationSample]:
        return iter(self._samples)

    def __add__(self, other: Iterable[EvaluationSample]) -> Samples:
        return Samples((*self._samples, *other))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Samples):
            return self._samples == other._samples
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(s.name for s in self._samples))

    def __repr__(self) -> str:
        names = ", ".join(repr(s.name) for s in self._samples[:5])
        more = f", ... ({len(self._samples)} in all)" if len(self._samples) > 5 else ""
        return f"Samples([{names}{more}])"

    @property
    def names(self) -> tuple[str, ...]:
        """The sample names, in order."""
        return tuple(s.name for s in self._samples)

    @property
    def tags(self) -> tuple[str, ...]:
        """Every distinct tag, in order of first appearance."""
        return tuple(dict.fromkeys(tag for s in self._samples for tag in s.tags))

    def filter_by_tags(self, *tags: str) -> Samples:
        """Keep the samples that carry at least one of ``tags`` (OR), in order.

        With no tags, returns this same object.
        """
        if not tags:
            return self
        wanted = frozenset(tags)
        return Samples(s for s in self._samples if not wanted.isdisjoint(s.tags))

    @classmethod
    async def load(cls, *sources: str | PathLike[str]) -> Samples:
        """Load samples from one or more sources, merged in order.

        A source is a file path (``.yaml``/``.yml``, ``.json``, ``.jsonl``) or anything a
        registered loader supports. File reading runs off the event loop.

        Raises:
            SampleLoadError: The source is invalid; the message names the file, the line, the
                sample and the fix. A missing file raises ``SampleFileNotFoundError``, which is
                also a ``FileNotFoundError``.
        """
        from ._loaders import load_sources

        return await load_sources(sources)

    @classmethod
    def load_sync(cls, *sources: str | PathLike[str]) -> Samples:
        """Like :meth:`load`, for synchronous code such as pytest collection."""
        from ._loaders import load_sources_sync

        return load_sources_sync(sources)

    @classmethod
    def stream(cls, source: str | PathLike[str]) -> AsyncIterator[EvaluationSample]:
        """Read samples lazily from a JSONL file, one line at a time.

        Memory stays bounded whatever the file size, so a Scorer can evaluate millions of
        samples. Errors name the line at fault.
        """
        from ._loaders import stream_jsonl

        return stream_jsonl(source)
