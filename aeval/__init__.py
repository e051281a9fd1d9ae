"""aeval: an asyncio-native evaluation engine for AI-infused applications.

``import aeval`` loads only this module, the version and the exceptions: every other public
name loads its module on first use (:data:`_LAZY`), so a program (or a command) pays for the
engine, the reports, the sample formats and their dependencies only when it uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _exceptions
from ._exceptions import *  # noqa: F403  (every exception is public)
from ._util._lazy import (
    ABC as _ABC,
    MACHINERY as _MACHINERY,
    RETURNED as _RETURNED,
    deprecations as _deprecations,
    lazy_package as _lazy_package,
    name_modules as _name_modules,
)
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
        Evaluation,
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
        HTTPResponseError as HTTPResponseError,
        HttpResponseError as HttpResponseError,
        HTTPResponseTooLargeError as HTTPResponseTooLargeError,
        HttpResponseTooLargeError as HttpResponseTooLargeError,
        HTTPStatusError as HTTPStatusError,
        HttpStatusError as HttpStatusError,
        HTTPTargetError as HTTPTargetError,
        HttpTargetError as HttpTargetError,
        HTTPTimeoutError as HTTPTimeoutError,
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
    "._engine._builder": ("Evaluation",),
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

_LAZY = _name_modules(_LAZY_MODULES)
"""Public names whose modules load on first use: every name but the exceptions."""

_HTTP_TARGET = (
    "only the aeval command's HTTP target raises it, as an error row whose type is "
    "Http{0}; Python code does not receive it"
)
_READ_RUN = "aeval.read_run reads a rows.jsonl or report.json back"

_DEPRECATED: dict[str, tuple[str, str]] = {
    **_deprecations(
        _RETURNED,
        {
            "._compare": ("ChangedPair", "ComparisonAssert"),
            "._engine._builder": ("EvaluationBuilder", "EvaluationRunner"),
            "._engine._scorer": ("RowStream", "ScorerStatistics"),
            "._reporting._assertions": ("ReportAssert",),
            "._reporting._judging": (
                "Calibration",
                "Disagreement",
                "JudgeCounts",
                "JudgeStatistics",
            ),
            "._reporting._values": (
                "FlakyCase",
                "ModelUsage",
                "RepeatStatistics",
                "StrategyStatistics",
                "TagStatistics",
            ),
            "._store": (
                "HistoryPoint",
                "Label",
                "LabelCalibration",
                "ReviewerAgreement",
                "ReviewerPair",
                "RowLabel",
                "RunSummary",
            ),
            ".strategies._cache": ("CacheStatistics",),
        },
    ),
    **_deprecations(
        _MACHINERY,
        {
            "._compare": ("PairKey", "RunSource"),
            "._engine._executor": ("IndexedSample",),
            "._reporting._report": ("Aggregator",),
            "._reporting._values": ("ReportParts",),
            "._samples._loaders": ("registered_loaders",),
        },
    ),
    **_deprecations(_ABC, {".abc": ("Executor", "SampleLoader", "Sink")}),
    **_deprecations(
        _READ_RUN, {"._reporting._codec": ("read_rows", "row_from_dict", "row_to_dict")}
    ),
    **{
        name: ("._exceptions", _HTTP_TARGET.format(error))
        for error in (
            "ResponseError",
            "ResponseTooLargeError",
            "StatusError",
            "TargetError",
            "TimeoutError",
        )
        for name in (f"HTTP{error}", f"Http{error}")
    },
    "ConfigError": (
        "._exceptions",
        "only the aeval command raises it, and prints it; Python code does not receive it",
    ),
    "HttpSampleLoader": (
        "._samples._loaders",
        "use aeval.HTTPSampleLoader (the same class: aeval spells HTTP in capitals)",
    ),
    "StoreSink": ("._store", "use store.sink(name, ...), which makes one (the same options)"),
}

__all__ = [
    "Comparison",
    "Conversation",
    "DownloadLimits",
    "ErrorInfo",
    "Evaluation",
    "EvaluationReport",
    "EvaluationResult",
    "EvaluationRow",
    "EvaluationSample",
    "HTTPSampleLoader",
    "JsonlSink",
    "JudgeCache",
    "Outcome",
    "Parameters",
    "RunInfo",
    "RunStore",
    "Samples",
    "Scorer",
    "ScriptedTurn",
    "Shard",
    "SimulatedUser",
    "Transcript",
    "Turn",
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
__all__ += _exceptions.__all__
__all__.sort()

__getattr__, __dir__ = _lazy_package(
    globals(), {**_LAZY, "trace": ".trace"}, deprecated=_DEPRECATED, claim=True
)
