"""The one check of a fraction: each caller keeps its own words (``check_fraction``)."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable

import pytest

from aeval import EvaluationResult
from aeval.online import OnlineEvaluator
from aeval.strategies import NotBlankStrategy, SegmentsStrategy


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda: EvaluationResult(True, 2),
            ValueError,
            "Score must be between 0.0 and 1.0, got: 2",
        ),
        (
            lambda: EvaluationResult(False, math.nan),
            ValueError,
            "Score must be between 0.0 and 1.0, got: nan",
        ),
        (
            lambda: EvaluationResult(True, "0.5"),  # type: ignore[arg-type]
            TypeError,
            "Score must be a number between 0.0 and 1.0, got '0.5'",
        ),
        (
            lambda: OnlineEvaluator(NotBlankStrategy(), sample_rates={"NotBlankStrategy": -0.5}),
            ValueError,
            "the sample rate of NotBlankStrategy must be between 0 and 1, got -0.5",
        ),
        (
            lambda: OnlineEvaluator(NotBlankStrategy(), sample_rates=True),
            TypeError,
            "sample_rates must be a number between 0 and 1, got True",
        ),
        (
            lambda: OnlineEvaluator(NotBlankStrategy(), review_rate=1.5),
            ValueError,
            "review_rate must be between 0 and 1, got 1.5",
        ),
        (
            lambda: SegmentsStrategy(threshold=1.5),
            ValueError,
            "threshold must be between 0.0 and 1.0, got 1.5",
        ),
        (
            lambda: SegmentsStrategy(threshold="high"),  # type: ignore[arg-type]
            TypeError,
            "threshold must be a number between 0.0 and 1.0, got 'high'",
        ),
    ],
)
def test_each_caller_words_its_error(
    make: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        make()


@pytest.mark.anyio
async def test_a_rate_function_out_of_range_is_logged_in_its_own_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="aeval.online")
    async with OnlineEvaluator(
        NotBlankStrategy(), sample_rates=lambda *_: 3, flush_interval=None
    ) as online:
        online.submit({"question": "?"}, "answer")
        await online.join()
    assert online.statistics().invalid == 1
    assert "the rate returned for NotBlankStrategy must be between 0 and 1, got 3" in caplog.text


def test_fractions_come_back_as_floats() -> None:
    assert EvaluationResult(True, 1).score == 1.0
    assert type(EvaluationResult(True, 1).score) is float
