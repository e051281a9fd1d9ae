"""The run store: every run kept in one SQLite file, for history and comparison."""

from __future__ import annotations

from ._store import DEFAULT_STORE_PATH, RunStore, StoreSink, config_digest
from ._values import HistoryPoint, RunSummary, Since, parse_since

__all__ = [
    "DEFAULT_STORE_PATH",
    "HistoryPoint",
    "RunStore",
    "RunSummary",
    "Since",
    "StoreSink",
    "config_digest",
    "parse_since",
]
