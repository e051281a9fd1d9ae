"""The run store: every run kept in one SQLite file, for history and comparison."""

from __future__ import annotations

from ._labels import Label, RowLabel, output_digest, row_digest
from ._store import DEFAULT_STORE_PATH, RunStore, StoreSink, config_digest
from ._values import HistoryPoint, RunSummary, Since, parse_since

__all__ = [
    "DEFAULT_STORE_PATH",
    "HistoryPoint",
    "Label",
    "RowLabel",
    "RunStore",
    "RunSummary",
    "Since",
    "StoreSink",
    "config_digest",
    "output_digest",
    "parse_since",
    "row_digest",
]
