"""The one check of a fraction: each caller keeps its own words (``check_fraction``)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest

from aeval import EvaluationResult
from aeval.online._sampling import Sampler, review_sampler
from aeval.strategies import SegmentsStrategy


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
            lambda: Sampler(("a",), {"a": -0.5}, seed=0),
            ValueError,
            "the sample rate of a must be between 0 and 1, got -0.5",
        ),
        (
            lambda: Sampler(("a",), True, seed=0),
            TypeError,
            "sample_rates must be a number between 0 and 1, got True",
        ),
        (
            lambda: Sampler(("a",), lambda *_: 3, seed=0).select(None, None),
            ValueError,
            "the rate returned for a must be between 0 and 1, got 3",
        ),
        (
            lambda: review_sampler(1.5, 0),
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


def test_fractions_come_back_as_floats() -> None:
    assert EvaluationResult(True, 1).score == 1.0
    assert type(EvaluationResult(True, 1).score) is float
    assert review_sampler(0, 0)() is False
    assert SegmentsStrategy(threshold=0)._threshold == 0.0
