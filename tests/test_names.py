"""One spelling for HTTP and the Strategy suffix; the names that left ``__all__`` still
resolve for one release, each with a DeprecationWarning saying what to use instead."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import aeval
import aeval.abc
import aeval.models
import aeval.pytest_plugin
import aeval.strategies

HTTP_ALIASES = [("HTTPSampleLoader", "HttpSampleLoader")]

HTTP_TARGET_ERRORS = [
    ("HTTPTargetError", "HttpTargetError"),
    ("HTTPStatusError", "HttpStatusError"),
    ("HTTPResponseError", "HttpResponseError"),
    ("HTTPResponseTooLargeError", "HttpResponseTooLargeError"),
    ("HTTPTimeoutError", "HttpTimeoutError"),
]
"""The errors only the aeval command's HTTP target raises: both spellings left ``aeval``."""

DEPRECATED = [
    *(("aeval", old) for _, old in HTTP_ALIASES),
    *(("aeval", name) for pair in HTTP_TARGET_ERRORS for name in pair),
    *(
        ("aeval", name)
        for name in (
            "Aggregator",
            "CacheStatistics",
            "Calibration",
            "ChangedPair",
            "ComparisonAssert",
            "Disagreement",
            "EvaluationBuilder",
            "EvaluationRunner",
            "Executor",
            "FlakyCase",
            "HistoryPoint",
            "IndexedSample",
            "JudgeCounts",
            "JudgeStatistics",
            "Label",
            "LabelCalibration",
            "ModelUsage",
            "PairKey",
            "RepeatStatistics",
            "ReportAssert",
            "ReportParts",
            "ReviewerAgreement",
            "ReviewerPair",
            "RowLabel",
            "RowStream",
            "RunSource",
            "RunSummary",
            "SampleLoader",
            "ScorerStatistics",
            "Sink",
            "StrategyStatistics",
            "TagStatistics",
            "read_rows",
            "registered_loaders",
            "row_from_dict",
            "row_to_dict",
        )
    ),
    ("aeval", "ConfigError"),
    ("aeval", "StoreSink"),
    ("aeval.models", "accepts_options"),
    ("aeval.models", "local_extra_missing"),
    *(("aeval.models", name) for name in ("ChatModel", "Clock", "Embedder", "ModelStatistics")),
    *(
        ("aeval.trace", name)
        for name in (
            "Capture",
            "Fixture",
            "ReplaySession",
            "ToolError",
            "ToolSource",
            "ToolTimeoutError",
            "TraceAssert",
            "TraceEvent",
            "UnmockedToolCall",
            "tool",
        )
    ),
    *(
        ("aeval.strategies", name)
        for name in (
            "CONVERSATION_CRITERIA",
            "CONVERSATION_PROMPT",
            "DEFAULT_PROMPT",
            "EachTurnStrategy",
            "GatedStrategy",
            "NamedStrategy",
            "STRUCTURED_PROMPT",
            "Strategy",
            "cosine_similarity",
        )
    ),
    *(
        ("aeval.formatters", name)
        for name in (
            "ENTRY_POINT_GROUP",
            "HtmlFormatter",
            "JsonFormatter",
            "MarkdownFormatter",
            "ReportFormatter",
            "save_report",
            "save_report_as",
        )
    ),
    *(("aeval.testing", name) for name in ("ChatReplyTypes", "EmbedCall", "VectorTypes", "main")),
    *(
        ("aeval.online", name)
        for name in ("RateFunction", "SampleRates", "Sampler", "Since", "WindowScore")
    ),
    ("aeval.ray", "LimitUsage"),
    ("aeval.pytest_plugin", "EvalAssertion"),
    ("aeval.pytest_plugin", "StrategyScore"),
]
"""Every name that left a package's ``__all__`` for the next release."""

PACKAGES = sorted({package for package, _ in DEPRECATED})

CANONICAL = {
    **{("aeval", old): ("aeval", new) for new, old in HTTP_ALIASES},
    **{
        ("aeval", name): ("aeval._exceptions", old)
        for pair in HTTP_TARGET_ERRORS
        for name in pair
        for old in pair[1:]
    },
    ("aeval", "Executor"): ("aeval.abc", "Executor"),
    ("aeval", "SampleLoader"): ("aeval.abc", "SampleLoader"),
    ("aeval", "Sink"): ("aeval.abc", "Sink"),
    ("aeval", "Aggregator"): ("aeval._reporting._report", "Aggregator"),
    ("aeval", "ReportParts"): ("aeval._reporting._values", "ReportParts"),
    ("aeval", "PairKey"): ("aeval._compare", "PairKey"),
    ("aeval", "row_to_dict"): ("aeval._reporting._codec", "row_to_dict"),
    ("aeval.models", "accepts_options"): ("aeval._model_types", "accepts_options"),
    **{("aeval.models", name): ("aeval.abc", name) for name in ("ChatModel", "Clock", "Embedder")},
    **{
        ("aeval.trace", name): ("aeval", name)
        for name in ("ToolError", "ToolTimeoutError", "UnmockedToolCall", "tool")
    },
    ("aeval.strategies", "Strategy"): ("aeval.abc", "Strategy"),
    ("aeval.strategies", "GatedStrategy"): ("aeval.strategies", "Gated"),
    ("aeval.strategies", "EachTurnStrategy"): ("aeval.strategies", "EachTurn"),
    **{
        ("aeval.strategies", name): ("aeval.strategies.conversation", name)
        for name in ("CONVERSATION_CRITERIA", "CONVERSATION_PROMPT")
    },
    **{
        ("aeval.strategies", name): ("aeval.strategies.judge", name)
        for name in ("DEFAULT_PROMPT", "STRUCTURED_PROMPT")
    },
    ("aeval.strategies", "cosine_similarity"): ("aeval.strategies.similarity", "cosine_similarity"),
    ("aeval.formatters", "ReportFormatter"): ("aeval.abc", "ReportFormatter"),
    ("aeval.formatters", "HtmlFormatter"): ("aeval.formatters.html", "HtmlFormatter"),
    ("aeval.formatters", "JsonFormatter"): ("aeval.formatters.json", "JsonFormatter"),
    ("aeval.formatters", "MarkdownFormatter"): ("aeval.formatters.markdown", "MarkdownFormatter"),
}
"""Where they live: for a public module, each resolves to that very object; for one of aeval's
own (private) modules, to an object of that name."""


def test_the_deprecated_names_are_exactly_the_ones_the_packages_keep_aside() -> None:
    kept = {
        (package, name)
        for package in PACKAGES
        for name in importlib.import_module(package)._DEPRECATED
    }
    assert kept == set(DEPRECATED)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_keeps_its_deprecated_names_out_of_all(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__)
    assert not set(module._DEPRECATED) & set(module.__all__)
    assert set(module.__all__) <= set(dir(module))
    assert dir(module) == sorted(dir(module))


@pytest.mark.parametrize(("package", "name"), DEPRECATED)
def test_a_deprecated_name_warns_and_still_resolves(package: str, name: str) -> None:
    module = importlib.import_module(package)
    assert name not in module.__all__
    with pytest.warns(DeprecationWarning, match=rf"{package}\.{name} is deprecated") as caught:
        value = getattr(module, name)
    assert caught[0].filename == __file__
    assert value is not None
    home, canonical = CANONICAL.get((package, name), (None, None))
    if home is None:
        return
    if any(part.startswith("_") for part in home.split(".")):
        assert value.__name__ == canonical  # aeval's own home: the object, by its own name
    else:
        assert value is getattr(importlib.import_module(home), str(canonical))


@pytest.mark.parametrize(("new", "old"), HTTP_ALIASES)
def test_the_http_spelling_is_the_canonical_one(new: str, old: str) -> None:
    assert new in aeval.__all__
    with pytest.warns(DeprecationWarning, match=f"use aeval.{new}"):
        assert getattr(aeval, new) is getattr(aeval, old)


def test_a_from_import_of_a_deprecated_name_warns_where_it_is_written() -> None:
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "try:\n"
        "    from aeval import HttpStatusError\n"
        "except DeprecationWarning as warning:\n"
        "    print(warning)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "aeval.HttpStatusError is deprecated and leaves aeval in the next release: "
        "only the aeval command's HTTP target raises it, as an error row whose type is "
        "HttpStatusError; Python code does not receive it"
    )


@pytest.mark.parametrize(
    ("old", "new"), [("GatedStrategy", "Gated"), ("EachTurnStrategy", "EachTurn")]
)
def test_a_strategy_has_one_spelling_the_one_the_design_names(old: str, new: str) -> None:
    assert new in aeval.strategies.__all__
    assert old not in aeval.strategies.__all__
    with pytest.warns(DeprecationWarning, match=f"use aeval.strategies.{new}"):
        assert getattr(aeval.strategies, old) is getattr(aeval.strategies, new)


def test_a_from_import_of_a_subpackage_deprecated_name_warns_where_it_is_written() -> None:
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "try:\n"
        "    from aeval.trace import ToolError\n"
        "except DeprecationWarning as warning:\n"
        "    print(warning)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "aeval.trace.ToolError is deprecated and leaves aeval.trace in the next release: "
        "import it from aeval, where it lives (the same object)"
    )


def test_the_pytest_plugin_module_finds_its_deprecated_names_in_its_package() -> None:
    with pytest.warns(DeprecationWarning, match=r"aeval\.pytest_plugin\.StrategyScore"):
        value = aeval.pytest_plugin.StrategyScore
    assert value.__name__ == "StrategyScore"


def test_an_http_status_error_is_caught_by_either_spelling() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(aeval.HttpStatusError):
        raise aeval.HTTPStatusError("HTTP 500", status=500)
