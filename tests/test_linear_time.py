"""Every built-in check that runs on the event loop is linear in its input.

Each check is fed the worst inputs we could construct for its patterns (long runs that a
pattern could start at every position of, unclosed quotes and fences, repeated labels and
braces, digit runs...) at 10,000 and 100,000 characters. Linear work grows about 10-fold,
quadratic work 100-fold; the test asserts the growth is below 25-fold, taking the fastest
of three alternating timings of each size, and measures again (keeping the lowest of three
ratios) when a first ratio is over the limit, since other processes on a shared machine can
slow one timing. No absolute time is asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from _worst_inputs import CHECKS, WORST

SMALL, LARGE = 10_000, 100_000
LIMIT = 25.0


def _batch(check: Callable[[str], object], text: str, repeats: int) -> float:
    started = time.perf_counter()
    for _ in range(repeats):
        check(text)
    return (time.perf_counter() - started) / repeats


def _ratio(check: Callable[[str], object], small: str, large: str) -> float:
    """The time per call on ``large`` over the time per call on ``small``, fastest of three.

    The timings of the two sizes alternate and span the same wall time (ten calls on the
    small input per call on the large one), so both share the machine alike.
    """
    once = _batch(check, large, 1)
    repeats = max(1, min(100, int(0.003 / max(once, 1e-7)) + 1))
    small_best = large_best = float("inf")
    for _ in range(3):
        small_best = min(small_best, _batch(check, small, repeats * LARGE // SMALL))
        large_best = min(large_best, _batch(check, large, repeats))
    return large_best / small_best


@pytest.mark.parametrize("check_name", sorted(CHECKS))
def test_each_check_grows_linearly_on_its_worst_inputs(check_name: str) -> None:
    check = CHECKS[check_name]
    slow = []
    for input_name, make in WORST.items():
        small, large = make(SMALL), make(LARGE)
        assert len(small) == SMALL and len(large) == LARGE, input_name
        ratio = _ratio(check, small, large)
        for _ in range(2):
            if ratio <= LIMIT:
                break
            ratio = min(ratio, _ratio(check, small, large))
        if ratio > LIMIT:
            slow.append(f"{input_name}: x{ratio:.0f}")
    assert slow == [], f"{check_name} grows faster than linearly on: {', '.join(slow)}"
