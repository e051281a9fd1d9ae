"""The tests behind a comparison: exact McNemar, the paired z-test, Holm, the detectable effect.

Every function here is pure and works on plain numbers; :mod:`._comparison` decides which
applies. No statistics library is needed at run time: the binomial tail is summed with
:func:`math.comb`, the normal tail is :func:`math.erfc`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from .._util._stats import normal_quantile

__all__ = [
    "POWER",
    "holm",
    "mcnemar_exact",
    "minimum_detectable_effect",
    "normal_two_sided",
    "sign_test",
]

POWER = 0.8
"""The power the minimum detectable effect is computed for."""

_EXACT_LIMIT = 20_000
"""Up to this many discordant pairs the binomial tail is summed in integers, exactly."""


def mcnemar_exact(regressions: int, fixes: int) -> float:
    """The two-sided exact McNemar p-value: a binomial test on the discordant pairs.

    Under "no difference" each of the ``n = b + c`` discordant pairs is as likely to be a
    regression as a fix, so ``b ~ Binomial(n, 1/2)`` and
    ``p = min(1, 2 * sum_{k <= min(b, c)} C(n, k) / 2^n)`` (1 when nothing is discordant).

    Up to 20,000 discordant pairs the sum is exact (integers, one rounding at the end); beyond
    that the terms are summed in floating point from the largest down (``math.lgamma`` for the
    largest), accurate to about 1e-9 relative, in time linear in ``min(b, c)``.

    Args:
        regressions: b, the pairs that passed in the baseline only.
        fixes: c, the pairs that passed in the candidate only.
    """
    if regressions < 0 or fixes < 0:
        raise ValueError(f"counts must be >= 0, got {regressions} and {fixes}")
    n = regressions + fixes
    k = min(regressions, fixes)
    if n == 0 or 2 * k >= n:
        return 1.0
    if n <= _EXACT_LIMIT:
        term = total = 1
        for i in range(k):
            term = term * (n - i) // (i + 1)
            total += term
        return min(1.0, 2 * total / (1 << n))
    log_term = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    ratio = tail = 1.0
    for i in range(k, 0, -1):
        ratio *= i / (n - i + 1)
        tail += ratio
        if ratio < tail * 1e-17:
            break
    return min(1.0, 2.0 * math.exp(log_term) * tail)


def sign_test(positive: int, negative: int) -> float:
    """The two-sided sign test: as :func:`mcnemar_exact`, on samples that moved up or down."""
    return mcnemar_exact(negative, positive)


def normal_two_sided(estimate: float, standard_error: float) -> float:
    """``P(|Z| >= |estimate / standard_error|)`` for a standard normal Z.

    Raises:
        ValueError: ``standard_error`` is not positive.
    """
    if not standard_error > 0.0:
        raise ValueError(f"the standard error must be positive, got {standard_error}")
    return math.erfc(abs(estimate / standard_error) / math.sqrt(2.0))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in the order given.

    Sort the m p-values ascending; the i-th smallest (i from 1) becomes
    ``max_{j <= i} min(1, (m - j + 1) * p_(j))``. Rejecting where the adjusted value is below
    alpha keeps the chance of any false "significant" in the family below alpha.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def minimum_detectable_effect(
    standard_error: float, samples: int, confidence: float, *, power: float = POWER
) -> float | None:
    """The smallest true difference (0-1 scale) a two-sided test finds with ``power``.

    ``MDE = (z_{1 - alpha/2} + z_power) * SE``, the normal approximation, with the standard
    error of the difference estimated from the runs. Two runs that agree on every sample show
    no spread at all; then the spread is taken at the rule of three's bound (a discordant
    share of 3 / n, the most that zero out of n leaves plausible at 95%), so the standard
    error is at least ``sqrt(3) / n``: identical runs do not claim to see every change.

    Args:
        standard_error: The standard error of the difference (0-1 scale).
        samples: The samples (clusters) compared.
        confidence: The test's confidence (``1 - alpha``).
        power: The chance of detecting the effect.

    Returns:
        The effect, or ``None`` with fewer than two samples.
    """
    if samples < 2:
        return None
    se = max(standard_error, math.sqrt(3.0) / samples)
    return (normal_quantile(confidence) + NormalDist().inv_cdf(power)) * se
