"""Human labels on samples: the verdict a person gave, for calibrating a judge."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["LABEL_KEY", "REVIEW_QUEUED", "read_label"]

LABEL_KEY = "label"
"""The sample metadata key holding the human verdict (the ``label`` field of sample files)."""

REVIEW_QUEUED = "review_queued"
"""The sample metadata key (``True``) of a live response queued for human review
(``OnlineEvaluator(review_rate=...)``)."""

_LABEL_WORDS = {
    "pass": True,
    "passed": True,
    "true": True,
    "fail": False,
    "failed": False,
    "false": False,
}


def read_label(value: Any) -> bool | None:
    """A human label as a verdict: ``pass``/``fail`` (also ``passed``, ``true``…, any case),
    a bool, or a human score between 0 and 1 (passing from 0.5); ``None`` for anything else.

    Example:
        >>> read_label("PASS"), read_label(0.3), read_label("maybe")
        (True, False, None)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _LABEL_WORDS.get(value.strip().lower())
    if isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0:
        return value >= 0.5
    return None
