"""Scorer(redact=...): whole secrets, and the start of one that a cut left behind."""

from __future__ import annotations

from typing import Any

import pytest

from aeval import EvaluationResult, EvaluationSample, evaluate_sync

SECRET = "sk-live-0123456789abcdef"
REDACTED = "[REDACTED]"


def explained(text: str) -> str | None:
    """The explanation of a row whose strategy explained itself with ``text``, in a run that
    redacts SECRET."""

    def quote(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.failing(0.0, text)

    report = evaluate_sync([EvaluationSample("s", ["q"])], lambda q: "out", quote, redact=[SECRET])
    [row] = report.evaluations
    return row.explanation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {SECRET} used", f"key {REDACTED} used"),
        (f"key {SECRET[:12]}...", f"key {REDACTED}..."),
        (f"key {SECRET[:9]}…", f"key {REDACTED}…"),
        (f"key {SECRET[:-1]}", f"key {REDACTED}"),
        (f"{SECRET[:4]}...", f"{REDACTED}..."),
        (f"key {SECRET[:3]}...", f"key {SECRET[:3]}..."),
        (f"{SECRET[:10]} in the middle", f"{SECRET[:10]} in the middle"),
        ("plain text...", "plain text..."),
    ],
)
def test_the_start_of_a_secret_left_by_a_cut_is_redacted(text: str, expected: str) -> None:
    assert explained(text) == expected


def test_a_strategy_that_quotes_a_cut_output_does_not_leak_half_a_secret() -> None:
    output = "x" * 50 + SECRET
    quoted = output[:60] + "..."
    assert SECRET[:10] in quoted and SECRET not in quoted
    assert explained(quoted) == "x" * 50 + REDACTED + "..."
