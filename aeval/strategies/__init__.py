"""Evaluation strategies: the checks a Scorer runs on each output."""

from __future__ import annotations

from . import rubrics as rubrics
from ._base import NamedStrategy, Strategy, TextStrategy
from ._gated import Gated, GatedStrategy
from .agent import (
    BudgetStrategy,
    ToolArgumentsStrategy,
    ToolCalledStrategy,
    ToolPolicyStrategy,
    ToolSequenceStrategy,
)
from .judge import DEFAULT_PROMPT, STRUCTURED_PROMPT, AiJudgeStrategy
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
    "BudgetStrategy",
    "ContainsStrategy",
    "DEFAULT_PROMPT",
    "ExactMatchStrategy",
    "Gated",
    "GatedStrategy",
    "GuardrailStrategy",
    "JsonStrategy",
    "NamedStrategy",
    "NotBlankStrategy",
    "PromptInjectionStrategy",
    "RefusalStrategy",
    "RegexStrategy",
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
]
