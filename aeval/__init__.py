"""aeval: an asyncio-native evaluation engine for AI-infused applications."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import trace as trace
from ._conversation import Conversation, ScriptedTurn, SimulatedUser, Transcript, Turn
from ._engine._builder import Evaluation, EvaluationBuilder, EvaluationRunner
from ._engine._executor import IndexedSample
from ._engine._scorer import RowStream, Scorer, ScorerStatistics
from ._engine._shards import Shard, merge_reports
from ._engine._sinks import JsonlSink, Sink
from ._engine._sync import evaluate_sync
from ._exceptions import (
    AbandonedCallsError,
    AevalError,
    ComparisonError,
    ConfigError,
    EvaluationSetupError,
    ExecutorError,
    FormatError,
    HTTPResponseError,
    HttpResponseError,
    HTTPResponseTooLargeError,
    HttpResponseTooLargeError,
    HTTPStatusError,
    HttpStatusError,
    HTTPTargetError,
    HttpTargetError,
    HTTPTimeoutError,
    HttpTimeoutError,
    MergeError,
    MissingExtraError,
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelResponseTooLargeError,
    ModelTimeoutError,
    NoLoaderError,
    NotSerializableError,
    ReportWriteError,
    RunNotFoundError,
    SampleFileNotFoundError,
    SampleLoadError,
    ScorerClosedError,
    StoreError,
    ToolError,
    ToolTimeoutError,
    UnmockedToolCall,
)
from ._reporting._assertions import ReportAssert, assert_that
from ._reporting._codec import read_rows, read_run, row_from_dict, row_to_dict
from ._reporting._judging import Calibration, Disagreement, JudgeCounts, JudgeStatistics, calibrate
from ._reporting._report import (
    Aggregator,
    EvaluationReport,
    FlakyCase,
    ModelUsage,
    RepeatStatistics,
    ReportParts,
    StrategyStatistics,
    TagStatistics,
)
from ._reporting._results import ErrorInfo, EvaluationResult, EvaluationRow, Outcome
from ._reporting._run_info import RunInfo
from ._samples import EvaluationSample, Parameters, Samples
from ._samples._loaders import (
    DownloadLimits,
    HTTPSampleLoader,
    HttpSampleLoader,
    SampleLoader,
    register_loader,
    registered_loaders,
    unregister_loader,
)
from ._util._publish import claim as _claim, publish as _publish
from ._version import __version__ as __version__
from .abc import Executor
from .trace._tool import tool

if TYPE_CHECKING:
    from ._compare import (
        ChangedPair,
        Comparison,
        ComparisonAssert,
        PairKey,
        RunSource,
        compare,
        compare_sync,
    )
    from ._store import (
        HistoryPoint,
        Label,
        LabelCalibration,
        ReviewerAgreement,
        ReviewerPair,
        RowLabel,
        RunStore,
        RunSummary,
        StoreSink,
        calibrate_labels,
        output_digest,
        pick_rows,
    )
    from .strategies._cache import CacheStatistics, JudgeCache

_LAZY = {
    **dict.fromkeys(
        (
            "ChangedPair",
            "Comparison",
            "ComparisonAssert",
            "PairKey",
            "RunSource",
            "compare",
            "compare_sync",
        ),
        "._compare",
    ),
    **dict.fromkeys(
        (
            "HistoryPoint",
            "Label",
            "LabelCalibration",
            "ReviewerAgreement",
            "ReviewerPair",
            "RowLabel",
            "RunStore",
            "RunSummary",
            "StoreSink",
            "calibrate_labels",
            "output_digest",
            "pick_rows",
        ),
        "._store",
    ),
    **dict.fromkeys(("CacheStatistics", "JudgeCache"), ".strategies._cache"),
}
"""Public names whose modules (SQLite, the statistics of comparisons) load on first use."""


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    _claim(value, __name__)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AbandonedCallsError",
    "AevalError",
    "Aggregator",
    "CacheStatistics",
    "Calibration",
    "ChangedPair",
    "Comparison",
    "ComparisonAssert",
    "ComparisonError",
    "ConfigError",
    "Conversation",
    "Disagreement",
    "DownloadLimits",
    "ErrorInfo",
    "Evaluation",
    "EvaluationBuilder",
    "EvaluationReport",
    "EvaluationResult",
    "EvaluationRow",
    "EvaluationRunner",
    "EvaluationSample",
    "EvaluationSetupError",
    "Executor",
    "ExecutorError",
    "FlakyCase",
    "FormatError",
    "HTTPResponseError",
    "HTTPResponseTooLargeError",
    "HTTPSampleLoader",
    "HTTPStatusError",
    "HTTPTargetError",
    "HTTPTimeoutError",
    "HistoryPoint",
    "HttpResponseError",
    "HttpResponseTooLargeError",
    "HttpSampleLoader",
    "HttpStatusError",
    "HttpTargetError",
    "HttpTimeoutError",
    "IndexedSample",
    "JsonlSink",
    "JudgeCache",
    "JudgeCounts",
    "JudgeStatistics",
    "Label",
    "LabelCalibration",
    "MergeError",
    "MissingExtraError",
    "ModelConfigurationError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelResponseTooLargeError",
    "ModelTimeoutError",
    "ModelUsage",
    "NoLoaderError",
    "NotSerializableError",
    "Outcome",
    "PairKey",
    "Parameters",
    "RepeatStatistics",
    "ReportAssert",
    "ReportParts",
    "ReportWriteError",
    "ReviewerAgreement",
    "ReviewerPair",
    "RowLabel",
    "RowStream",
    "RunInfo",
    "RunNotFoundError",
    "RunSource",
    "RunStore",
    "RunSummary",
    "SampleFileNotFoundError",
    "SampleLoadError",
    "SampleLoader",
    "Samples",
    "Scorer",
    "ScorerClosedError",
    "ScorerStatistics",
    "ScriptedTurn",
    "Shard",
    "SimulatedUser",
    "Sink",
    "StoreError",
    "StoreSink",
    "StrategyStatistics",
    "TagStatistics",
    "ToolError",
    "ToolTimeoutError",
    "Transcript",
    "Turn",
    "UnmockedToolCall",
    "assert_that",
    "calibrate",
    "calibrate_labels",
    "compare",
    "compare_sync",
    "evaluate_sync",
    "merge_reports",
    "output_digest",
    "pick_rows",
    "read_rows",
    "read_run",
    "register_loader",
    "registered_loaders",
    "row_from_dict",
    "row_to_dict",
    "tool",
    "unregister_loader",
]


_publish(globals(), (name for name in __all__ if name not in _LAZY), __name__)
