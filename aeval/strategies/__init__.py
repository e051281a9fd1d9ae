"""Evaluation strategies: the checks a Scorer runs on each output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import (
    ABC as _ABC,
    lazy_package as _lazy_package,
    name_modules as _name_modules,
)

if TYPE_CHECKING:
    from . import rubrics as rubrics
    from ._base import (
        NamedStrategy as NamedStrategy,
        Strategy as Strategy,
        TextStrategy,
        inline,
    )
    from ._gated import Gated, GatedStrategy as GatedStrategy
    from .agent import (
        BudgetStrategy,
        ToolArgumentsStrategy,
        ToolCalledStrategy,
        ToolCallsStrategy,
        ToolPolicyStrategy,
        ToolSequenceStrategy,
    )
    from .conversation import (
        CONVERSATION_CRITERIA as CONVERSATION_CRITERIA,
        CONVERSATION_PROMPT as CONVERSATION_PROMPT,
        ConversationJudgeStrategy,
        EachTurn,
        EachTurnStrategy as EachTurnStrategy,
    )
    from .grounding import (
        AnswerRelevancyStrategy,
        ContextPrecisionStrategy,
        ContextRecallStrategy,
        FaithfulnessStrategy,
    )
    from .judge import (
        DEFAULT_PROMPT as DEFAULT_PROMPT,
        STRUCTURED_PROMPT as STRUCTURED_PROMPT,
        AiJudgeStrategy,
    )
    from .pii import PIIStrategy
    from .retrieval import RetrievalStrategy
    from .safety import PromptInjectionStrategy, RefusalStrategy
    from .similarity import (
        SemanticSimilarityStrategy,
        cosine_similarity as cosine_similarity,
    )
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
        "TextStrategy",
        "inline",
    ),
    "._gated": ("Gated",),
    ".agent": (
        "BudgetStrategy",
        "ToolArgumentsStrategy",
        "ToolCalledStrategy",
        "ToolCallsStrategy",
        "ToolPolicyStrategy",
        "ToolSequenceStrategy",
    ),
    ".conversation": (
        "ConversationJudgeStrategy",
        "EachTurn",
    ),
    ".grounding": (
        "AnswerRelevancyStrategy",
        "ContextPrecisionStrategy",
        "ContextRecallStrategy",
        "FaithfulnessStrategy",
    ),
    ".judge": ("AiJudgeStrategy",),
    ".pii": ("PIIStrategy",),
    ".retrieval": ("RetrievalStrategy",),
    ".safety": (
        "PromptInjectionStrategy",
        "RefusalStrategy",
    ),
    ".similarity": ("SemanticSimilarityStrategy",),
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

_LAZY = _name_modules(_LAZY_MODULES)

_BASE = (
    "it is aeval's own base class; a strategy is any object with evaluate(sample, output) "
    "(aeval.abc.Strategy), and aeval.strategies.TextStrategy is the base of text checks"
)
_DESIGN = "use aeval.strategies.{0} (the same class, under the name the design gives it)"
_MODULE = "import it from aeval.strategies.{0}, the module of the strategy it belongs to"

_DEPRECATED: dict[str, tuple[str, str]] = {
    "Strategy": ("..abc", _ABC),
    "NamedStrategy": ("._base", _BASE),
    "GatedStrategy": ("._gated", _DESIGN.format("Gated")),
    "EachTurnStrategy": (".conversation", _DESIGN.format("EachTurn")),
    "CONVERSATION_CRITERIA": (".conversation", _MODULE.format("conversation")),
    "CONVERSATION_PROMPT": (".conversation", _MODULE.format("conversation")),
    "DEFAULT_PROMPT": (".judge", _MODULE.format("judge")),
    "STRUCTURED_PROMPT": (".judge", _MODULE.format("judge")),
    "cosine_similarity": (".similarity", _MODULE.format("similarity")),
}

__all__ = [
    "AiJudgeStrategy",
    "AnswerRelevancyStrategy",
    "BudgetStrategy",
    "ContainsStrategy",
    "ContextPrecisionStrategy",
    "ContextRecallStrategy",
    "ConversationJudgeStrategy",
    "EachTurn",
    "ExactMatchStrategy",
    "FaithfulnessStrategy",
    "Gated",
    "GuardrailStrategy",
    "JsonStrategy",
    "NotBlankStrategy",
    "PIIStrategy",
    "PromptInjectionStrategy",
    "RefusalStrategy",
    "RegexStrategy",
    "RetrievalStrategy",
    "SegmentsStrategy",
    "SemanticSimilarityStrategy",
    "TextStrategy",
    "ToolArgumentsStrategy",
    "ToolCalledStrategy",
    "ToolCallsStrategy",
    "ToolPolicyStrategy",
    "ToolSequenceStrategy",
    "inline",
]

__getattr__, __dir__ = _lazy_package(
    globals(), {**_LAZY, "rubrics": ".rubrics"}, deprecated=_DEPRECATED
)
