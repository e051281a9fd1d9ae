"""The Redactor: whole secrets, and the start of one that a cut left behind."""

from __future__ import annotations

import pytest

from aeval._engine._redact import REDACTED, Redactor

SECRET = "sk-live-0123456789abcdef"


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
    assert Redactor([SECRET]).text(text) == expected


def test_a_strategy_that_quotes_a_cut_output_does_not_leak_half_a_secret() -> None:
    output = "x" * 50 + SECRET
    quoted = output[:60] + "..."
    assert SECRET[:10] in quoted and SECRET not in quoted
    assert Redactor([SECRET]).text(quoted) == "x" * 50 + REDACTED + "..."
