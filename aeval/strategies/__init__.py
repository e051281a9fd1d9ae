"""Evaluation strategies: the checks a Scorer runs on each output."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import rubrics as rubrics
    from ._base import NamedStrategy, Strategy, TextStrategy, inline
    from ._gated import Gated, GatedStrategy
    from .agent import (
        BudgetStrategy,
        ToolArgumentsStrategy,
        ToolCalledStrategy,
        ToolCallsStrategy,
        ToolPolicyStrategy,
        ToolSequenceStrategy,
    )
    from .conversation import (
        CONVERSATION_CRITERIA,
        CONVERSATION_PROMPT,
        ConversationJudgeStrategy,
        EachTurn,
        EachTurnStrategy,
    )
    from .grounding import (
        AnswerRelevancyStrategy,
        ContextPrecisionStrategy,
        ContextRecallStrategy,
        FaithfulnessStrategy,
    )
    from .judge import DEFAULT_PROMPT, STRUCTURED_PROMPT, AiJudgeStrategy
    from .pii import PIIStrategy
    from .retrieval import RetrievalStrategy
    from .safety import PromptInjectionStrategy, RefusalStrategy
    from .similarity import SemanticSimilarityStrategy, cosine_similarity
    from .text import (
        ContainsStrategy,
        ExactMatchStrategy,
        GuardrailStrategy,
        JsonStrategy,
        NotBlankStrategy,
        RegexStrategy,
        SegmentsStrategy,
    )


_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "._base": (
        "NamedStrategy",
        "Strategy",
        "TextStrategy",
        "inline",
    ),
    "._gated": (
        "Gated",
        "GatedStrategy",
    ),
    ".agent": (
        "BudgetStrategy",
        "ToolArgumentsStrategy",
        "ToolCalledStrategy",
        "ToolCallsStrategy",
        "ToolPolicyStrategy",
        "ToolSequenceStrategy",
    ),
    ".conversation": (
        "CONVERSATION_CRITERIA",
        "CONVERSATION_PROMPT",
        "ConversationJudgeStrategy",
        "EachTurn",
        "EachTurnStrategy",
    ),
    ".grounding": (
        "AnswerRelevancyStrategy",
        "ContextPrecisionStrategy",
        "ContextRecallStrategy",
        "FaithfulnessStrategy",
    ),
    ".judge": (
        "DEFAULT_PROMPT",
        "STRUCTURED_PROMPT",
        "AiJudgeStrategy",
    ),
    ".pii": ("PIIStrategy",),
    ".retrieval": ("RetrievalStrategy",),
    ".safety": (
        "PromptInjectionStrategy",
        "RefusalStrategy",
    ),
    ".similarity": (
        "SemanticSimilarityStrategy",
        "cosine_similarity",
    ),
    ".text": (
        "ContainsStrategy",
        "ExactMatchStrategy",
        "GuardrailStrategy",
        "JsonStrategy",
        "NotBlankStrategy",
        "RegexStrategy",
        "SegmentsStrategy",
    ),
}
"""The module of each public name, imported on first use: a run that uses ``exact_match``
imports the text strategies, not the judges, their cache and the rest."""

_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}

_SUBMODULES = frozenset(("rubrics",))


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aeval.strategies' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})


__all__ = [
    "AiJudgeStrategy",
    "AnswerRelevancyStrategy",
    "BudgetStrategy",
    "CONVERSATION_CRITERIA",
    "CONVERSATION_PROMPT",
    "ContainsStrategy",
    "ContextPrecisionStrategy",
    "ContextRecallStrategy",
    "ConversationJudgeStrategy",
    "DEFAULT_PROMPT",
    "EachTurn",
    "EachTurnStrategy",
    "ExactMatchStrategy",
    "FaithfulnessStrategy",
    "Gated",
    "GatedStrategy",
    "GuardrailStrategy",
    "JsonStrategy",
    "NamedStrategy",
    "NotBlankStrategy",
    "PIIStrategy",
    "PromptInjectionStrategy",
    "RefusalStrategy",
    "RegexStrategy",
    "RetrievalStrategy",
    "STRUCTURED_PROMPT",
    "SegmentsStrategy",
    "SemanticSimilarityStrategy",
    "Strategy",
    "TextStrategy",
    "ToolArgumentsStrategy",
    "ToolCalledStrategy",
    "ToolCallsStrategy",
    "ToolPolicyStrategy",
    "ToolSequenceStrategy",
    "cosine_similarity",
    "inline",
]
