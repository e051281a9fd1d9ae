"""The retriever's text-segment check (seed 000's ``TextSegmentEvaluationStrategy``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._reporting._results import EvaluationResult
from .._util._numbers import check_fraction
from ._base import TextStrategy
from ._text_common import (
    check_flag,
    check_texts,
    expected_texts,
    show_values,
)

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["SegmentsStrategy"]


class SegmentsStrategy(TextStrategy):
    """Checks that retrieved text contains the expected segments (seed 000's retriever check).

    Each expected segment is found when some item of the output contains it. The score is
    found / expected; the result passes when the score reaches ``threshold`` (upstream
    requires every segment, the default 1.0).

    Args:
        segments: The expected segments; by default the sample's expected output (a list of
            strings, the ``expected-outputs`` of a sample file, or a single string).
        threshold: The smallest passing score, from 0.0 to 1.0.
        case_sensitive: Upstream lower-cases both sides; ``True`` compares them as they are.
        name: The name of the report rows.

    The output may be a list of strings (or any iterable of items shown with ``str()``) or
    a single string.
    """

    __slots__ = ("_case_sensitive", "_segments", "_threshold")

    def __init__(
        self,
        segments: str | Iterable[str] | None = None,
        *,
        threshold: float = 1.0,
        case_sensitive: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._segments = None if segments is None else check_texts(segments, "segments")
        if self._segments == ():
            raise ValueError("segments must not be empty: pass None to use the expected output")
        self._threshold = check_fraction(threshold, "threshold", bounds="0.0 and 1.0", got="got {}")
        self._case_sensitive = check_flag(case_sensitive, "case_sensitive")

    def _config(self) -> dict[str, Any]:
        return {
            "segments": self._segments,
            "threshold": self._threshold,
            "case_sensitive": self._case_sensitive,
        }

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Look for each expected segment in the items of ``output``."""
        if output is None:
            return super().evaluate(sample, output)
        if isinstance(output, str):
            items = [output]
        elif isinstance(output, Iterable) and not isinstance(output, bytes | Mapping):
            items = [item if isinstance(item, str) else str(item) for item in output]
        else:
            items = [str(output)]
        return self._search(sample, items)

    def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
        return self._search(sample, [text])

    def _search(self, sample: EvaluationSample, items: list[str]) -> EvaluationResult:
        segments = self._segments
        if segments is None:
            segments = expected_texts(sample.expected_output)
            if segments is None:
                return EvaluationResult.failing(
                    f"Sample {sample.name!r} has no expected segments: set its expected "
                    "outputs or pass segments="
                )
            if not segments:
                return EvaluationResult.failing(
                    f"Sample {sample.name!r} has an empty list of expected segments"
                )
        if not self._case_sensitive:
            items = [item.casefold() for item in items]

        def found(segment: str) -> bool:
            needle = segment if self._case_sensitive else segment.casefold()
            return any(needle in item for item in items)

        missing = [segment for segment in segments if not found(segment)]
        count = len(segments) - len(missing)
        score = count / len(segments)
        explanation = f"Found {count} of {len(segments)} expected segments"
        if missing:
            explanation += f"; missing: {show_values(missing)}"
        metadata = {
            "found": count,
            "expected": len(segments),
            "missing": missing,
            "threshold": self._threshold,
        }
        return EvaluationResult(score >= self._threshold, score, explanation, metadata)
