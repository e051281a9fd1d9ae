"""The fast path of sample files: an item that has only the common keys, each well typed.

Most items of a large JSONL file are ``{"name", "parameters", "expected-output"}`` with
perhaps ``tags`` and ``metadata``. :func:`plain_sample` builds such an item's sample with a
handful of type checks and without ``EvaluationSample``'s own validation (which would check
the same things again); anything else (another key, a wrong type, a blank name) returns
``None``, and the full builder in ``_formats`` handles it and names the problem. So the
messages stay in one place, and a key added to ``SAMPLE_KEYS`` takes the full path
until it is added here too.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ._model import EvaluationSample, make_sample, raw_parameters

__all__ = ["PLAIN_KEYS", "plain_sample"]

PLAIN_KEYS = frozenset(("name", "parameters", "expected-output", "tags", "metadata"))
"""The keys an item of the fast path may have (a subset of ``SAMPLE_KEYS``)."""

_MISSING: Any = object()
_CONVERSATION_METADATA = frozenset(("turns", "simulated_user"))
"""Metadata keys that ``EvaluationSample`` checks as a conversation's: the full path."""

_EMPTY: Any = MappingProxyType({})
_UNNAMED = [(None,) * count for count in range(8)]
"""The names of 0 to 7 unnamed parameters (``Parameters`` of a list), shared."""


def plain_sample(item: Any) -> EvaluationSample | None:
    """The sample of a parsed item that has only :data:`PLAIN_KEYS`, each of the usual
    type; ``None`` for any other item (the full builder then names its problem).

    It builds what ``checked_sample(name, parameters_of(parameters), ...)`` of
    ``aeval._samples._model`` would, with :func:`make_sample`: this runs once per line of a
    large file.
    """
    if type(item) is not dict or not item.keys() <= PLAIN_KEYS:
        return None
    get = item.get
    name = get("name")
    if type(name) is not str or not name.strip():
        return None
    parameters = get("parameters", _MISSING)
    if type(parameters) is list:
        values = tuple(parameters)
        count = len(values)
        params = raw_parameters(values, _UNNAMED[count] if count < 8 else (None,) * count)
    elif type(parameters) is dict:
        for key in parameters:
            if type(key) is not str:
                return None
        params = raw_parameters(tuple(parameters.values()), tuple(parameters))
    else:
        return None
    tags = get("tags")
    if tags is None:
        tags = ()
    elif type(tags) is list:
        for tag in tags:
            if type(tag) is not str:
                return None
        tags = tuple(tags)
    else:
        return None
    metadata = get("metadata")
    if metadata is None:
        metadata = _EMPTY
    elif type(metadata) is dict and _CONVERSATION_METADATA.isdisjoint(metadata):
        metadata = MappingProxyType(dict(metadata))
    else:
        return None
    return make_sample(name, params, get("expected-output"), tags, metadata)
