"""The agent keys of a sample file: the tools expected, forbidden, their arguments, fixtures.

They are kept in the sample's metadata under fixed keys (``aeval.trace._keys``), as
``must-contain`` is, so samples built in Python set them the same way
(``metadata={"expected_tools": [...]}``) and every copy of a sample keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..trace import Fixtures
from ..trace._keys import SAMPLE_KEYS as AGENT_KEYS
from ._expected_calls import expected_calls_problem, functions_problem, order_problem

__all__ = [
    "AGENT_KEYS",
    "CONTEXT_KEY",
    "CONTEXT_METADATA",
    "RELEVANT_IDS",
    "RELEVANT_IDS_KEY",
    "agent_problem",
    "read_agent_keys",
]

CONTEXT_KEY = "context"
"""The sample file key of the passages a grounded answer may use (``context: [...]``)."""
CONTEXT_METADATA = "context"
"""The metadata key the ``context:`` passages are kept under."""
RELEVANT_IDS_KEY = "relevant-ids"
"""The sample file key of the ids of the documents a perfect retriever returns."""
RELEVANT_IDS = "relevant_ids"
"""The metadata key ``relevant-ids:`` is kept under (a list of document ids, or a mapping of
ids to relevance grades)."""

_FORMS = {
    "expected-tools": "expected-tools: [get_weather, book_ticket]",
    "forbidden-tools": "forbidden-tools: [delete_booking]",
}


def _tool_names_problem(key: str, value: Any) -> str | None:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        return f"'{key}' must be a list of tool names, write {_FORMS[key]}"
    return None


def agent_problem(key: str, value: Any) -> str | None:
    """What is wrong with the value of agent key ``key`` of a sample file, or ``None``."""
    if key in _FORMS:
        return _tool_names_problem(key, value)
    if key == "expected-tool-arguments":
        if not isinstance(value, Mapping) or not all(
            isinstance(tool, str) and tool and isinstance(arguments, Mapping)
            for tool, arguments in value.items()
        ):
            return (
                "'expected-tool-arguments' must map each tool name to the arguments its call "
                "should have, write expected-tool-arguments: {get_weather: {city: Mysore}}"
            )
        return None
    if key == "expected-calls":
        return expected_calls_problem(value)
    if key == "expected-calls-order":
        return order_problem(value)
    if key == "functions":
        return functions_problem(value)
    problem = Fixtures.problem(value)
    return None if problem is None else problem


def read_agent_keys(item: Mapping[Any, Any]) -> tuple[dict[str, Any], str | None, str | None]:
    """The metadata entries of a sample's agent keys, and the first problem and its key."""
    entries: dict[str, Any] = {}
    passages = item.get(CONTEXT_KEY)
    if passages is not None:
        texts = [passages] if isinstance(passages, str) else passages
        if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
            return (
                {},
                "'context' must be a list of passages (non-empty texts), write "
                'context: ["The Eiffel Tower is 330 m tall."]',
                CONTEXT_KEY,
            )
        entries[CONTEXT_METADATA] = list(texts)
    for key, metadata_key in AGENT_KEYS.items():
        if key not in item or item[key] is None:
            continue
        value = item[key]
        problem = agent_problem(key, value)
        if problem is not None:
            return {}, problem, key
        if key in _FORMS and isinstance(value, str):
            value = [value]
        entries[metadata_key] = value
    relevant = item.get(RELEVANT_IDS_KEY)
    if isinstance(relevant, dict):
        if not relevant or not all(
            _is_id(doc) and _is_grade(grade) for doc, grade in relevant.items()
        ):
            return (
                {},
                "'relevant-ids' as a mapping gives each document id its relevance grade, a "
                "whole number of 0 or more: write relevant-ids: {doc-1: 2, doc-7: 1}",
                RELEVANT_IDS_KEY,
            )
        entries[RELEVANT_IDS] = {str(doc): grade for doc, grade in relevant.items()}
    elif relevant is not None:
        ids = (
            [relevant]
            if isinstance(relevant, str | int) and not isinstance(relevant, bool)
            else relevant
        )
        if not isinstance(ids, list) or not ids or not all(_is_id(each) for each in ids):
            return (
                {},
                "'relevant-ids' must be a non-empty list of document ids, write "
                "relevant-ids: [doc-1, doc-7]",
                RELEVANT_IDS_KEY,
            )
        entries[RELEVANT_IDS] = [str(each) for each in ids]
    return entries, None, None


def _is_grade(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return (isinstance(value, str) and bool(value.strip())) or isinstance(value, int)
