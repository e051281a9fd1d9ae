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
import aeval.strategies

HTTP_ALIASES = [
    ("HTTPSampleLoader", "HttpSampleLoader"),
    ("HTTPTargetError", "HttpTargetError"),
    ("HTTPStatusError", "HttpStatusError"),
    ("HTTPResponseError", "HttpResponseError"),
    ("HTTPResponseTooLargeError", "HttpResponseTooLargeError"),
    ("HTTPTimeoutError", "HttpTimeoutError"),
]

DEPRECATED = [
    *(("aeval", old) for _, old in HTTP_ALIASES),
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
    ("aeval.models", "accepts_options"),
    ("aeval.models", "local_extra_missing"),
]
"""Every name that left a package's ``__all__`` for the next release."""

CANONICAL = {
    **{old: ("aeval", new) for new, old in HTTP_ALIASES},
    "Executor": ("aeval.abc", "Executor"),
    "SampleLoader": ("aeval.abc", "SampleLoader"),
    "Sink": ("aeval.abc", "Sink"),
    "Aggregator": ("aeval._reporting._report", "Aggregator"),
    "ReportParts": ("aeval._reporting._report", "ReportParts"),
    "PairKey": ("aeval._compare", "PairKey"),
    "row_to_dict": ("aeval._reporting._codec", "row_to_dict"),
    "accepts_options": ("aeval._model_types", "accepts_options"),
}
"""Where some of them live, to check they resolve to that object."""


def test_the_deprecated_names_are_exactly_the_ones_the_packages_keep_aside() -> None:
    kept = {("aeval", name) for name in aeval._DEPRECATED}
    kept |= {("aeval.models", name) for name in aeval.models._DEPRECATED}
    assert kept == set(DEPRECATED)


@pytest.mark.parametrize(("package", "name"), DEPRECATED)
def test_a_deprecated_name_warns_and_still_resolves(package: str, name: str) -> None:
    module = importlib.import_module(package)
    assert name not in module.__all__
    with pytest.warns(DeprecationWarning, match=rf"{package}\.{name} is deprecated") as caught:
        value = getattr(module, name)
    assert caught[0].filename == __file__
    assert value is not None
    home, canonical = CANONICAL.get(name, (None, None))
    if home is not None:
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
        "use aeval.HTTPStatusError (the same class: aeval spells HTTP in capitals)"
    )


def test_gated_strategy_is_gated() -> None:
    gated = aeval.strategies.GatedStrategy(
        aeval.strategies.NotBlankStrategy(), after=[aeval.strategies.NotBlankStrategy()]
    )
    assert isinstance(gated, aeval.strategies.Gated)
    assert aeval.strategies.GatedStrategy is aeval.strategies.Gated
    assert gated.name == "NotBlankStrategy"


def test_an_http_status_error_is_caught_by_its_old_name_too() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(aeval.HttpStatusError):
        raise aeval.HTTPStatusError("HTTP 500", status=500)
