"""aeval: an asyncio-native evaluation engine for AI-infused applications.

``import aeval`` loads only this module, the version and the exceptions: every other public
name loads its module on first use (:data:`_LAZY`), so a program (or a command) pays for the
engine, the reports, the sample formats and their dependencies only when it uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._exceptions import (
    AbandonedCallsError,
    AevalError,
    ComparisonError,
    ExecutorError,
    FormatError,
    HTTPResponseError,
    HTTPResponseTooLargeError,
    HTTPStatusError,
    HTTPTargetError,
    HTTPTimeoutError,
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
from ._util._lazy import lazy_names as _lazy_names
from ._util._publish import claim as _claim, publish as _publish
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from . import trace as trace
    from ._compare import (
        ChangedPair as ChangedPair,
        Comparison,
        ComparisonAssert as ComparisonAssert,
        PairKey as PairKey,
        RunSource as RunSource,
        compare,
        compare_sync,
    )
    from ._conversation import (
        Conversation,
        ScriptedTurn,
        SimulatedUser,
        Transcript,
        Turn,
    )
    from ._engine._builder import (
        Evaluation as Evaluation,
        EvaluationBuilder as EvaluationBuilder,
        EvaluationRunner as EvaluationRunner,
    )
    from ._engine._executor import (
        IndexedSample as IndexedSample,
    )
    from ._engine._scorer import (
        RowStream as RowStream,
        Scorer,
        ScorerStatistics as ScorerStatistics,
    )
    from ._engine._shards import (
        Shard,
        merge_reports,
    )
    from ._engine._sinks import (
        JsonlSink,
    )
    from ._engine._sync import (
        evaluate_sync,
    )
    from ._exceptions import (
        ConfigError as ConfigError,
        EvaluationSetupError as EvaluationSetupError,
        HttpResponseError as HttpResponseError,
        HttpResponseTooLargeError as HttpResponseTooLargeError,
        HttpStatusError as HttpStatusError,
        HttpTargetError as HttpTargetError,
        HttpTimeoutError as HttpTimeoutError,
    )
    from ._reporting._assertions import (
        ReportAssert as ReportAssert,
        assert_that,
    )
    from ._reporting._codec import (
        read_rows as read_rows,
        read_run,
        row_from_dict as row_from_dict,
        row_to_dict as row_to_dict,
    )
    from ._reporting._judging import (
        Calibration as Calibration,
        Disagreement as Disagreement,
        JudgeCounts as JudgeCounts,
        JudgeStatistics as JudgeStatistics,
        calibrate,
    )
    from ._reporting._report import (
        Aggregator as Aggregator,
        EvaluationReport,
        FlakyCase as FlakyCase,
        ModelUsage as ModelUsage,
        RepeatStatistics as RepeatStatistics,
        ReportParts as ReportParts,
        StrategyStatistics as StrategyStatistics,
        TagStatistics as TagStatistics,
    )
    from ._reporting._results import (
        ErrorInfo,
        EvaluationResult,
        EvaluationRow,
        Outcome,
    )
    from ._reporting._run_info import (
        RunInfo,
    )
    from ._samples import (
        EvaluationSample,
        Parameters,
        Samples,
    )
    from ._samples._bfcl import (
        load_bfcl,
    )
    from ._samples._loaders import (
        DownloadLimits,
        HTTPSampleLoader,
        HttpSampleLoader as HttpSampleLoader,
        register_loader,
        registered_loaders as registered_loaders,
        unregister_loader,
    )
    from ._store import (
        HistoryPoint as HistoryPoint,
        Label as Label,
        LabelCalibration as LabelCalibration,
        ReviewerAgreement as ReviewerAgreement,
        ReviewerPair as ReviewerPair,
        RowLabel as RowLabel,
        RunStore,
        RunSummary as RunSummary,
        StoreSink as StoreSink,
        calibrate_labels,
        output_digest,
        pick_rows,
    )
    from .abc import (
        Executor as Executor,
        SampleLoader as SampleLoader,
        Sink as Sink,
    )
    from .strategies._cache import (
        CacheStatistics as CacheStatistics,
        JudgeCache,
    )
    from .trace._tool import (
        tool,
    )

_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "._compare": (
        "Comparison",
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
    "._engine._scorer": ("Scorer",),
    "._engine._shards": (
        "Shard",
        "merge_reports",
    ),
    "._engine._sinks": ("JsonlSink",),
    "._engine._sync": ("evaluate_sync",),
    "._reporting._assertions": ("assert_that",),
    "._reporting._codec": ("read_run",),
    "._reporting._judging": ("calibrate",),
    "._reporting._report": ("EvaluationReport",),
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
        "register_loader",
        "unregister_loader",
    ),
    "._store": (
        "RunStore",
        "calibrate_labels",
        "output_digest",
        "pick_rows",
    ),
    ".strategies._cache": ("JudgeCache",),
    ".trace._tool": ("tool",),
}
"""Each module of the package and the public names it defines, loaded on first use."""

_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}
"""Public names whose modules load on first use: every name but the exceptions."""

_ALIAS = "use aeval.HTTP{rest} (the same class: aeval spells HTTP in capitals)"
_ABC = "import it from aeval.abc, where every contract lives (the same object)"
_MACHINERY = "it is aeval's own machinery, not a user's concept"
_RETURNED = "it is a value aeval hands back; use it where it is returned, no import needed"
_READ_RUN = "aeval.read_run reads a rows.jsonl or report.json back"
_FRONT_DOOR = (
    "aeval.Scorer is the one front door: `async with Scorer(concurrency) as scorer: "
    "report = await scorer.evaluate(samples, function, *strategies)`"
)

_DEPRECATED: dict[str, tuple[str, str]] = {
    "ChangedPair": ("._compare", _RETURNED),
    "ComparisonAssert": ("._compare", _RETURNED),
    "PairKey": ("._compare", _MACHINERY),
    "RunSource": ("._compare", _MACHINERY),
    "Evaluation": ("._engine._builder", _FRONT_DOOR),
    "EvaluationBuilder": ("._engine._builder", _RETURNED),
    "EvaluationRunner": ("._engine._builder", _RETURNED),
    "IndexedSample": ("._engine._executor", _MACHINERY),
    "RowStream": ("._engine._scorer", _RETURNED),
    "ScorerStatistics": ("._engine._scorer", _RETURNED),
    "ConfigError": (
        "._exceptions",
        "only the aeval command raises it, and prints it; Python code does not receive it",
    ),
    "EvaluationSetupError": (
        "._exceptions",
        "only the deprecated Evaluation builder raises it; aeval.Scorer checks its arguments "
        "when it is called",
    ),
    "HttpResponseError": ("._exceptions", _ALIAS.format(rest="ResponseError")),
    "HttpResponseTooLargeError": ("._exceptions", _ALIAS.format(rest="ResponseTooLargeError")),
    "HttpStatusError": ("._exceptions", _ALIAS.format(rest="StatusError")),
    "HttpTargetError": ("._exceptions", _ALIAS.format(rest="TargetError")),
    "HttpTimeoutError": ("._exceptions", _ALIAS.format(rest="TimeoutError")),
    "ReportAssert": ("._reporting._assertions", _RETURNED),
    "read_rows": ("._reporting._codec", _READ_RUN),
    "row_from_dict": ("._reporting._codec", _READ_RUN),
    "row_to_dict": ("._reporting._codec", _READ_RUN),
    "Calibration": ("._reporting._judging", _RETURNED),
    "Disagreement": ("._reporting._judging", _RETURNED),
    "JudgeCounts": ("._reporting._judging", _RETURNED),
    "JudgeStatistics": ("._reporting._judging", _RETURNED),
    "Aggregator": ("._reporting._report", _MACHINERY),
    "FlakyCase": ("._reporting._report", _RETURNED),
    "ModelUsage": ("._reporting._report", _RETURNED),
    "RepeatStatistics": ("._reporting._report", _RETURNED),
    "ReportParts": ("._reporting._report", _MACHINERY),
    "StrategyStatistics": ("._reporting._report", _RETURNED),
    "TagStatistics": ("._reporting._report", _RETURNED),
    "HttpSampleLoader": ("._samples._loaders", _ALIAS.format(rest="SampleLoader")),
    "registered_loaders": ("._samples._loaders", _MACHINERY),
    "HistoryPoint": ("._store", _RETURNED),
    "Label": ("._store", _RETURNED),
    "LabelCalibration": ("._store", _RETURNED),
    "ReviewerAgreement": ("._store", _RETURNED),
    "ReviewerPair": ("._store", _RETURNED),
    "RowLabel": ("._store", _RETURNED),
    "RunSummary": ("._store", _RETURNED),
    "StoreSink": ("._store", "use store.sink(name, ...), which makes one (the same options)"),
    "Executor": (".abc", _ABC),
    "SampleLoader": (".abc", _ABC),
    "Sink": (".abc", _ABC),
    "CacheStatistics": (".strategies._cache", _RETURNED),
}
"""Names that left ``__all__``: each still resolves for one release, with a
:class:`DeprecationWarning` saying what to use instead."""

__getattr__ = _lazy_names(
    globals(),
    {**_LAZY, "trace": ".trace"},
    deprecated=_DEPRECATED,
    claim=lambda value: _claim(value, __name__),
)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AbandonedCallsError",
    "AevalError",
    "Comparison",
    "ComparisonError",
    "Conversation",
    "DownloadLimits",
    "ErrorInfo",
    "EvaluationReport",
    "EvaluationResult",
    "EvaluationRow",
    "EvaluationSample",
    "ExecutorError",
    "FormatError",
    "HTTPResponseError",
    "HTTPResponseTooLargeError",
    "HTTPSampleLoader",
    "HTTPStatusError",
    "HTTPTargetError",
    "HTTPTimeoutError",
    "JsonlSink",
    "JudgeCache",
    "MergeError",
    "MissingExtraError",
    "ModelConfigurationError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelResponseTooLargeError",
    "ModelTimeoutError",
    "NoLoaderError",
    "NotSerializableError",
    "Outcome",
    "Parameters",
    "ReportWriteError",
    "RunInfo",
    "RunNotFoundError",
    "RunStore",
    "SampleFileNotFoundError",
    "SampleLoadError",
    "Samples",
    "Scorer",
    "ScorerClosedError",
    "ScriptedTurn",
    "Shard",
    "SimulatedUser",
    "StoreError",
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
    "read_run",
    "register_loader",
    "tool",
    "unregister_loader",
]


_publish(globals(), (name for name in __all__ if name not in _LAZY), __name__)
