"""Evaluation strategies: the checks a Scorer runs on each output."""

from __future__ import annotations

from ._base import Strategy, TextStrategy
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
    "ContainsStrategy",
    "ExactMatchStrategy",
    "GuardrailStrategy",
    "JsonStrategy",
    "NotBlankStrategy",
    "RegexStrategy",
    "SegmentsStrategy",
    "Strategy",
    "TextStrategy",
]
