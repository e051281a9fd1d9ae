"""The run store: every run kept in one SQLite file, for history and comparison."""

from __future__ import annotations

from ._labels import Label, RowLabel, output_digest, row_digest
from ._pick import PICKS, REVIEW_QUEUED, Pick, pick_rows
from ._review import LabelCalibration, ReviewerAgreement, ReviewerPair, calibrate_labels
from ._store import DEFAULT_STORE_PATH, RunStore, StoreSink, config_digest
from ._values import HistoryPoint, RunSummary, Since, parse_since

__all__ = [
    "DEFAULT_STORE_PATH",
    "HistoryPoint",
    "Label",
    "LabelCalibration",
    "PICKS",
    "Pick",
    "REVIEW_QUEUED",
    "ReviewerAgreement",
    "ReviewerPair",
    "RowLabel",
    "RunStore",
    "RunSummary",
    "Since",
    "StoreSink",
    "calibrate_labels",
    "config_digest",
    "output_digest",
    "parse_since",
    "pick_rows",
    "row_digest",
]
