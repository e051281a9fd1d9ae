"""aeval: an asyncio-native evaluation engine for AI-infused applications.

``import aeval`` loads only this module, the version and the exceptions: every other public
name loads its module on first use (:data:`_LAZY`), so a program (or a command) pays for the
engine, the reports, the sample formats and their dependencies only when it uses them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
from ._util._publish import claim as _claim, publish as _publish
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from . import trace as trace
    from ._compare import (
        ChangedPair,
        Comparison,
        ComparisonAssert,
        PairKey,
        RunSource,
        compare,
        compare_sync,
    )
    from ._conversation import Conversation, ScriptedTurn, SimulatedUser, Transcript, Turn
    from ._engine._builder import Evaluation, EvaluationBuilder, EvaluationRunner
    from ._engine._executor import IndexedSample
    from ._engine._scorer import RowStream, Scorer, ScorerStatistics
    from ._engine._shards import Shard, merge_reports
    from ._engine._sinks import JsonlSink, Sink
    from ._engine._sync import evaluate_sync
    from ._reporting._assertions import ReportAssert, assert_that
    from ._reporting._codec import read_rows, read_run, row_from_dict, row_to_dict
    from ._reporting._judging import (
        Calibration,
        Disagreement,
        JudgeCounts,
        JudgeStatistics,
        calibrate,
    )
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
    from ._samples._bfcl import load_bfcl
    from ._samples._loaders import (
        DownloadLimits,
        HTTPSampleLoader,
        HttpSampleLoader,
        SampleLoader,
        register_loader,
        registered_loaders,
        unregister_loader,
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
    from .abc import Executor
    from .strategies._cache import CacheStatistics, JudgeCache
    from .trace._tool import tool

_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "._compare": (
        "ChangedPair",
        "Comparison",
        "ComparisonAssert",
        "PairKey",
        "RunSource",
        "compare",
        "compare_sync",
    ),
    "._conversation": (
        "Conversation",
        "ScriptedTurn",
        "SimulatedUser",
        "Transcript",
        "Turn",
    ),
    "._engine._builder": (
        "Evaluation",
        "EvaluationBuilder",
        "EvaluationRunner",
    ),
    "._engine._executor": ("IndexedSample",),
    "._engine._scorer": (
        "RowStream",
        "Scorer",
        "ScorerStatistics",
    ),
    "._engine._shards": (
        "Shard",
        "merge_reports",
    ),
    "._engine._sinks": (
        "JsonlSink",
        "Sink",
    ),
    "._engine._sync": ("evaluate_sync",),
    "._reporting._assertions": (
        "ReportAssert",
        "assert_that",
    ),
    "._reporting._codec": (
        "read_rows",
        "read_run",
        "row_from_dict",
        "row_to_dict",
    ),
    "._reporting._judging": (
        "Calibration",
        "Disagreement",
        "JudgeCounts",
        "JudgeStatistics",
        "calibrate",
    ),
    "._reporting._report": (
        "Aggregator",
        "EvaluationReport",
        "FlakyCase",
        "ModelUsage",
        "RepeatStatistics",
        "ReportParts",
        "StrategyStatistics",
        "TagStatistics",
    ),
    "._reporting._results": (
        "ErrorInfo",
        "EvaluationResult",
        "EvaluationRow",
        "Outcome",
    ),
    "._reporting._run_info": ("RunInfo",),
    "._samples": (
        "EvaluationSample",
        "Parameters",
        "Samples",
    ),
    "._samples._bfcl": ("load_bfcl",),
    "._samples._loaders": (
        "DownloadLimits",
        "HTTPSampleLoader",
        "HttpSampleLoader",
        "SampleLoader",
        "register_loader",
        "registered_loaders",
        "unregister_loader",
    ),
    "._store": (
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
    ".abc": ("Executor",),
    ".strategies._cache": (
        "CacheStatistics",
        "JudgeCache",
    ),
    ".trace._tool": ("tool",),
}
"""Each module of the package and the public names it defines, loaded on first use."""

_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}
"""Public names whose modules load on first use: every name but the exceptions."""


_SUBPACKAGES = {"trace": ".trace"}
"""Subpackages reached as attributes (``aeval.trace``), imported on first use."""


def __getattr__(name: str) -> object:
    subpackage = _SUBPACKAGES.get(name)
    if subpackage is not None:
        return importlib.import_module(subpackage, __name__)
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
    "load_bfcl",
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
