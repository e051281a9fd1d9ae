"""Evaluation strategies: the checks a Scorer runs on each output."""

from __future__ import annotations

from . import rubrics as rubrics
from ._base import NamedStrategy, Strategy, TextStrategy, inline
from ._gated import Gated, GatedStrategy
from .agent import (
    BudgetStrategy,
    ToolArgumentsStrategy,
    ToolCalledStrategy,
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
    "ToolPolicyStrategy",
    "ToolSequenceStrategy",
    "cosine_similarity",
    "inline",
]
