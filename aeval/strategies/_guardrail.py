"""The guardrail's ACCEPT/REJECT check (seed 000's ``GuardrailEvaluationStrategy``)."""

from __future__ import annotations

import re
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from .._reporting._results import EvaluationResult
from ._base import TextStrategy
from ._text_common import (
    show_value,
)

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["GuardrailStrategy"]

_ACCEPT = "ACCEPT"
_REJECT = "REJECT"
_VERDICT = re.compile(r"\s*(ACCEPT|REJECT)(?:ED)?(?![^\W\d_])[\s:.,;-]*(.*)", re.I | re.S)
_VERDICT_ATTRIBUTES = ("result", "verdict", "accepted")


def _verdict_text(text: str) -> tuple[str, str | None] | None:
    """``"REJECT: off topic"`` → ``("REJECT", "off topic")``; ``None`` if not a verdict."""
    match = _VERDICT.match(text)
    if match is None:
        return None
    return match.group(1).upper(), match.group(2).strip() or None


def _verdict(output: Any, depth: int = 0) -> tuple[str, str | None] | None:
    if isinstance(output, bool):
        return (_ACCEPT if output else _REJECT), None
    if isinstance(output, Enum):
        value = output.value
        if isinstance(value, str | bool):
            found = _verdict(value)
            if found is not None:
                return found
        return _verdict_text(output.name)
    if isinstance(output, str):
        return _verdict_text(output)
    if depth == 0:
        for attribute in _VERDICT_ATTRIBUTES:
            value = getattr(output, attribute, None)
            if value is not None and not callable(value):
                return _verdict(value, depth + 1)
    return None


class GuardrailStrategy(TextStrategy):
    """Checks a guardrail's ACCEPT/REJECT verdict (seed 000's ``GuardrailEvaluationStrategy``).

    The expected verdict is ``expect``, else the sample's expected output, read like
    upstream: text starting with ``ACCEPT`` or ``REJECT`` (case-insensitive here). The
    output is the verdict: ``"ACCEPT"``, ``"REJECT"`` or text starting with one (upstream's
    function returns ``"REJECT:" + message``), a bool (``True`` accepts), an ``Enum`` named
    or valued so, or an object whose ``result``, ``verdict`` or ``accepted`` attribute
    holds one of those. Following the seed, *positive* means accepted: a wrongly accepted
    input is a false positive, a wrongly rejected one a false negative.

    Args:
        expect: ``"ACCEPT"`` or ``"REJECT"`` for every sample (case-insensitive).
        name: The name of the report rows.
    """

    __slots__ = ("_expect",)

    def __init__(
        self,
        *,
        expect: Literal["ACCEPT", "REJECT", "accept", "reject"] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        if expect is not None and (
            not isinstance(expect, str) or expect.strip().upper() not in (_ACCEPT, _REJECT)
        ):
            raise ValueError(f"expect must be 'ACCEPT' or 'REJECT', got {expect!r}")
        self._expect = None if expect is None else expect.strip().upper()

    def _config(self) -> dict[str, Any]:
        return {"expect": self._expect}

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Compare the guardrail verdict ``output`` with the expected one."""
        expected = self._expect
        if expected is None:
            raw = sample.expected_output
            parsed = _verdict_text(raw) if isinstance(raw, str) else None
            if parsed is None:
                return EvaluationResult.failing(
                    f"Unknown expected behavior: {show_value(raw)}; the expected output of sample "
                    f"{sample.name!r} must be ACCEPT or REJECT (or pass expect=)"
                )
            expected = parsed[0]
        if output is None:
            return super().evaluate(sample, output)
        verdict = _verdict(output)
        if verdict is None:
            return EvaluationResult(
                False,
                0.0,
                f"Output {show_value(output)} is not a guardrail verdict: expected ACCEPT or "
                "REJECT (or text starting with one), a bool, or an object with a result, "
                "verdict or accepted attribute",
                {"expected": expected, "verdict": None},
            )
        actual, reason = verdict
        metadata: dict[str, Any] = {"expected": expected, "verdict": actual, "reason": reason}
        because = f" ({reason})" if reason else ""
        if expected == _ACCEPT and actual == _ACCEPT:
            metadata["classification"] = "true_positive"
            return EvaluationResult(True, 1.0, "Correctly accepted on-topic question", metadata)
        if expected == _REJECT and actual == _REJECT:
            metadata["classification"] = "true_negative"
            return EvaluationResult(
                True, 1.0, f"Correctly rejected off-topic question{because}", metadata
            )
        if expected == _ACCEPT:
            metadata["classification"] = "false_negative"
            return EvaluationResult(
                False,
                0.0,
                f"False negative: incorrectly rejected on-topic question{because}",
                metadata,
            )
        metadata["classification"] = "false_positive"
        return EvaluationResult(
            False, 0.0, "False positive: incorrectly accepted off-topic question", metadata
        )
