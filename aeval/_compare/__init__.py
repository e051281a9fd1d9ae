"""Comparing two runs: alignment, the paired statistics, the verdict (rendered by
:mod:`aeval.formatters`)."""

from __future__ import annotations

from ._align import PairKey
from ._assertions import ComparisonAssert
from ._comparison import ChangedPair, Comparison, Verdict
from ._gates import Gate, regression_message
from ._refs import DEFAULT_STORE, STORE_ENV, load_ref, store_path
from ._sides import (
    LoadedSide,
    RunSource,
    Side,
    compare,
    compare_loaded,
    compare_sync,
    load_side,
)

__all__ = [
    "DEFAULT_STORE",
    "STORE_ENV",
    "ChangedPair",
    "Comparison",
    "ComparisonAssert",
    "Gate",
    "LoadedSide",
    "PairKey",
    "RunSource",
    "Side",
    "Verdict",
    "compare",
    "compare_loaded",
    "compare_sync",
    "load_ref",
    "load_side",
    "regression_message",
    "store_path",
]
