"""The fast path of sample files, the one seam of the sample builder (``_formats``).

Most items of a large file are ``{"name", "parameters", "expected-output"}`` with perhaps
``tags`` and ``metadata``. :func:`plain_samples` builds such items' samples with a handful of
type checks and without ``EvaluationSample``'s own validation (which would check the same
things again); at any other item (another key, a wrong type, a blank name) it stops, and
the builder (``_formats._build_sample``) takes that item and names its problem. So the
messages stay in one place, and an item with any other key of ``SAMPLE_KEYS`` is built by
the builder. ``tests/test_sample_builder.py`` checks on generated items that the two make
the same sample; this path halves the time of loading a large JSONL file.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

from ._model import EvaluationSample, make_sample, raw_parameters

__all__ = ["DONE", "PLAIN_KEYS", "plain_sample", "plain_samples"]

PLAIN_KEYS = frozenset(("name", "parameters", "expected-output", "tags", "metadata"))
"""The keys an item of the fast path may have (a subset of ``SAMPLE_KEYS``)."""

_MISSING: Any = object()
DONE: Any = object()
"""What :func:`plain_samples` returns when every item was plain."""
_CONVERSATION_METADATA = frozenset(("turns", "simulated_user"))
"""Metadata keys that ``EvaluationSample`` checks as a conversation's: the full path."""

_EMPTY: Any = MappingProxyType({})
_UNNAMED = [(None,) * count for count in range(8)]
"""The names of 0 to 7 unnamed parameters (``Parameters`` of a list), shared."""


def plain_sample(item: Any) -> EvaluationSample | None:
    """The sample of a parsed item that has only :data:`PLAIN_KEYS`, each of the usual
    type; ``None`` for any other item (the full builder then names its problem)."""
    out: list[EvaluationSample] = []
    plain_samples(iter((item,)), out)
    return out[0] if out else None


def plain_samples(items: Iterator[Any], out: list[EvaluationSample]) -> Any:
    """Append the samples of ``items`` to ``out`` up to the first item that is not plain
    (see :func:`plain_sample`), and return that item, taken from ``items``; :data:`DONE`
    when every item was.

    Each sample is the one ``EvaluationSample(name, parameters, expected_output, tags=...,
    metadata=...)`` would build, made with :func:`make_sample` and :func:`raw_parameters`.
    This runs once per line of a large file, so a chunk's items are built in one loop, and
    ``items`` may parse them as it goes (``map(orjson.loads, lines)``: each line's objects
    are then let go before the next is parsed).
    """
    plain_keys, empty, missing, unnamed = PLAIN_KEYS, _EMPTY, _MISSING, _UNNAMED
    conversation, proxy, make, new_parameters = (
        _CONVERSATION_METADATA,
        MappingProxyType,
        make_sample,
        raw_parameters,
    )
    append = out.append
    for item in items:
        if type(item) is not dict or not item.keys() <= plain_keys:
            return item
        get = item.get
        name = get("name")
        if type(name) is not str or not name.strip():
            return item
        parameters = get("parameters", missing)
        if type(parameters) is list:
            values = tuple(parameters)
            count = len(values)
            params = new_parameters(values, unnamed[count] if count < 8 else (None,) * count)
        elif type(parameters) is dict:
            for key in parameters:
                if type(key) is not str:
                    return item
            params = new_parameters(tuple(parameters.values()), tuple(parameters))
        else:
            return item
        tags = get("tags")
        if tags is None:
            tags = ()
        elif type(tags) is list:
            for tag in tags:
                if type(tag) is not str:
                    return item
            tags = tuple(tags)
        else:
            return item
        metadata = get("metadata")
        if metadata is None:
            metadata = empty
        elif type(metadata) is dict and conversation.isdisjoint(metadata):
            metadata = proxy(dict(metadata))
        else:
            return item
        append(make(name, params, get("expected-output"), tags, metadata))
    return DONE
