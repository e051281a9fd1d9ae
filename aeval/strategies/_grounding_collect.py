"""The grounding of a sample: what its answer may rest on, cut to a budget of characters."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._samples._agent_keys import CONTEXT_METADATA
from .._util._numbers import truncate
from ..trace import current
from ._judge_prompt import text_of

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["GROUNDING_BUDGET", "TOOL_RESULT_CHARS", "Grounding", "collect_grounding"]

GROUNDING_BUDGET = 12_000
"""The most characters of grounding a judge is shown; the rest is cut and the row says so."""

TOOL_RESULT_CHARS = 2_000
"""The most characters of one tool call's result in the grounding."""


@dataclass(frozen=True, slots=True)
class Grounding:
    """What a sample's answer may rest on.

    Attributes:
        passages: Every piece, in order: retrieved documents (best first), tool results,
            then the sample's ``context:`` passages, each cut to fit the budget.
        documents: The retrieved documents' texts in rank order (the ``context:`` passages
            when nothing was retrieved), as the context metrics judge them.
        chars: The characters of the whole grounding before it was cut.
        truncated: Whether anything was cut to the budget.
    """

    passages: tuple[str, ...]
    documents: tuple[str, ...]
    chars: int
    truncated: bool

    def text(self) -> str:
        """The passages numbered one per paragraph, as the judge sees them."""
        if not self.passages:
            return "(nothing was retrieved, returned by a tool or given as context)"
        return "\n\n".join(f"[{i}] {p}" for i, p in enumerate(self.passages, 1))

    def metadata(self, budget: int) -> dict[str, Any]:
        """What a row says of its grounding: its size, and whether and where it was cut."""
        facts: dict[str, Any] = {"grounding_passages": len(self.passages)}
        if self.truncated:
            facts.update(grounding_truncated=True, grounding_chars=self.chars, budget=budget)
        return facts


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
        except ValueError:
            text = str(value)
    return truncate(text, TOOL_RESULT_CHARS)


def collect_grounding(sample: EvaluationSample, *, budget: int = GROUNDING_BUDGET) -> Grounding:
    """The grounding of ``sample``: its trace's documents and tool results, and its context.

    Call it inside a strategy's ``evaluate`` (the trace is the current sample's). A tool
    result is rendered as JSON and cut to :data:`TOOL_RESULT_CHARS`; the pieces are then
    kept in order until ``budget`` characters, the one that crosses it cut short.
    """
    trace = current()
    documents: list[str] = []
    tools: list[str] = []
    if trace is not None:
        for retrieval in trace.retrievals:
            for document in retrieval.documents:
                if document.text:
                    prefix = f"(document {document.id}) " if document.id is not None else ""
                    documents.append(prefix + document.text)
        for call in trace.tool_calls:
            if call.error is None:
                tools.append(f"(tool {call.name} returned) {_result_text(call.result)}")
    passages = sample.metadata.get(CONTEXT_METADATA) or ()
    context = [text_of(p) for p in passages] if isinstance(passages, list | tuple) else []
    pieces = [*documents, *tools, *context]
    chars = sum(len(p) for p in pieces)
    kept: list[str] = []
    left = budget
    for piece in pieces:
        if left <= 0:
            break
        kept.append(piece if len(piece) <= left else piece[:left] + "…")
        left -= len(piece)
    ranked = tuple(documents or context)
    return Grounding(tuple(kept), ranked, chars, chars > budget)
