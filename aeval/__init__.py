"""aeval: an asyncio-native evaluation engine for AI-infused applications.

``import aeval`` loads only this module, the version and the exceptions: every other public
name loads its module on first use (:data:`_LAZY`), so a program (or a command) pays for the
engine, the reports, the sample formats and their dependencies only when it uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _exceptions
from ._exceptions import *  # noqa: F403  (every exception is public)
from ._util._lazy import lazy_package as _lazy_package
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

_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}
"""Public names whose modules load on first use: every name but the exceptions."""

_ALIAS = "use aeval.HTTP{rest} (the same class: aeval spells HTTP in capitals)"
_HTTP_TARGET = (
    "only the aeval command's HTTP target raises it, as an error row whose type is "
    "{0}; Python code does not receive it"
)
_ABC = "import it from aeval.abc, where every contract lives (the same object)"
_MACHINERY = "it is aeval's own machinery, not a user's concept"
_RETURNED = "it is a value aeval hands back; use it where it is returned, no import needed"
_READ_RUN = "aeval.read_run reads a rows.jsonl or report.json back"

_DEPRECATED: dict[str, tuple[str, str]] = {
    "ConfigError": (
        "._exceptions",
        "only the aeval command raises it, and prints it; Python code does not receive it",
    ),
    "ChangedPair": ("._compare", _RETURNED),
    "ComparisonAssert": ("._compare", _RETURNED),
    "PairKey": ("._compare", _MACHINERY),
    "RunSource": ("._compare", _MACHINERY),
    "EvaluationBuilder": ("._engine._builder", _RETURNED),
    "EvaluationRunner": ("._engine._builder", _RETURNED),
    "IndexedSample": ("._engine._executor", _MACHINERY),
    "RowStream": ("._engine._scorer", _RETURNED),
    "ScorerStatistics": ("._engine._scorer", _RETURNED),
    "HTTPResponseError": ("._exceptions", _HTTP_TARGET.format("HttpResponseError")),
    "HttpResponseError": ("._exceptions", _HTTP_TARGET.format("HttpResponseError")),
    "HTTPResponseTooLargeError": ("._exceptions", _HTTP_TARGET.format("HttpResponseTooLargeError")),
    "HttpResponseTooLargeError": ("._exceptions", _HTTP_TARGET.format("HttpResponseTooLargeError")),
    "HTTPStatusError": ("._exceptions", _HTTP_TARGET.format("HttpStatusError")),
    "HttpStatusError": ("._exceptions", _HTTP_TARGET.format("HttpStatusError")),
    "HTTPTargetError": ("._exceptions", _HTTP_TARGET.format("HttpTargetError")),
    "HttpTargetError": ("._exceptions", _HTTP_TARGET.format("HttpTargetError")),
    "HTTPTimeoutError": ("._exceptions", _HTTP_TARGET.format("HttpTimeoutError")),
    "HttpTimeoutError": ("._exceptions", _HTTP_TARGET.format("HttpTimeoutError")),
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
