"""aeval: an asyncio-native evaluation engine for AI-infused applications."""

from __future__ import annotations

from ._exceptions import (
    AevalError,
    EvaluationSetupError,
    FormatError,
    NoLoaderError,
    SampleFileNotFoundError,
    SampleLoadError,
    ScorerClosedError,
)
from ._report import Aggregator, EvaluationReport, StrategyStatistics, TagStatistics
from ._results import ErrorInfo, EvaluationResult, EvaluationRow, Outcome
from ._samples import EvaluationSample, Parameters, Samples

__version__ = "0.1.0"

__all__ = [
    "AevalError",
    "Aggregator",
    "ErrorInfo",
    "EvaluationReport",
    "EvaluationResult",
    "EvaluationRow",
    "EvaluationSample",
    "EvaluationSetupError",
    "FormatError",
    "NoLoaderError",
    "Outcome",
    "Parameters",
    "SampleFileNotFoundError",
    "SampleLoadError",
    "Samples",
    "ScorerClosedError",
    "StrategyStatistics",
    "TagStatistics",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("aeval._"):
        _obj.__module__ = "aeval"
del _name, _obj
