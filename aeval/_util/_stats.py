"""The statistics behind every score: clustered standard errors and repeat estimators.

A score is the mean of 0/1 row values (1 for a passed row). Rows of one sample (its strategies
and its repeats) are not independent, so the standard error treats each sample as a cluster,
after Miller, "Adding Error Bars to Evals" (arXiv 2411.00640)::

    SE = sqrt(C / (C - 1)) * (1 / n) * sqrt( sum_c ( sum_{i in c} (s_i - mean) )^2 )

with n rows in C clusters. The factor C / (C - 1) is the usual small-sample correction (CR1);
with one row per cluster SE is then the textbook sqrt(s^2 / n) with the sample variance s^2.
Expanding the square lets the sums be kept in O(1) memory per closed cluster:
``sum_c (S_c - n_c * mean)^2 = sum S_c^2 - 2 * mean * sum S_c n_c + mean^2 * sum n_c^2``.

The interval is Wilson's score interval, which stays honest where the normal one collapses
(at 0 % and 100 % the spread of the rows is 0, and score ± z·SE has no width). With one row
per sample it is the textbook Wilson interval over the n rows. With clusters it is Wilson's
interval over the effective number of rows n / deff, the design effect deff = SE² / (p(1 − p)
/ n) kept between 1 (it never narrows below the rows' Wilson interval) and sum n_c² / n (every
row of a sample alike, the most clustering can cost); where SE says nothing of the spread
(p = 0 or 1) deff takes that most, so 2 of 2 samples of 3 rows each give the width of 2
samples, not of 6 rows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ClusteredMean",
    "Kappa",
    "MomentsCounter",
    "cohen_kappa",
    "fleiss_kappa",
    "normal_quantile",
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
]


def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 for 0.95).

    Raises:
        ValueError: ``confidence`` is not strictly between 0 and 1.
    """
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise TypeError(f"confidence must be a number between 0 and 1, got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence!r}")
    return _quantile(confidence)


@functools.lru_cache(maxsize=16)
def _quantile(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(
    successes: float, trials: float, confidence: float = 0.95
) -> tuple[float, float]:
    """Wilson's score interval of a proportion, as statsmodels' ``proportion_confint(...,
    method="wilson")``; [0, 1] without trials.

    Unlike p ± z·sqrt(p(1 − p) / n) it keeps a width at p = 0 and p = 1 (2 of 2 gives
    [0.34, 1.00] at 95 %) and stays within [0, 1].

    Args:
        successes: The count that passed (may be fractional for an effective count).
        trials: The count tried (may be fractional).
        confidence: The coverage, strictly between 0 and 1.
    """
    z = normal_quantile(confidence)
    if trials <= 0:
        return (0.0, 1.0)
    p = min(1.0, max(0.0, successes / trials))
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2.0 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)) / denominator
    low = 0.0 if p == 0.0 else max(0.0, centre - half)
    high = 1.0 if p == 1.0 else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True, slots=True)
class ClusteredMean:
    """The sums from which a mean of row values and its clustered standard error follow.

    Attributes:
        rows: n, the rows counted.
        total: The sum of the row values.
        clusters: C, the clusters (samples) the rows belong to.
        cluster_sq: The sum over clusters of the squared cluster sums.
        cluster_cross: The sum over clusters of cluster sum × cluster size.
        cluster_size_sq: The sum over clusters of the squared cluster sizes.
    """

    rows: int = 0
    total: float = 0.0
    clusters: int = 0
    cluster_sq: float = 0.0
    cluster_cross: float = 0.0
    cluster_size_sq: float = 0.0

    @property
    def mean(self) -> float:
        """The mean row value, 0.0 when there are no rows."""
        return self.total / self.rows if self.rows else 0.0

    @property
    def standard_error(self) -> float | None:
        """The clustered standard error of :attr:`mean`; ``None`` with fewer than 2 clusters."""
        if self.clusters < 2 or not self.rows:
            return None
        mean = self.mean
        spread = (
            self.cluster_sq - 2.0 * mean * self.cluster_cross + mean * mean * self.cluster_size_sq
        )
        correction = self.clusters / (self.clusters - 1)
        return math.sqrt(max(spread, 0.0) * correction) / self.rows

    @property
    def effective_rows(self) -> float | None:
        """n / deff, the rows the clustered spread is worth (between n² / sum n_c² and n);
        ``None`` with fewer than 2 clusters."""
        se = self.standard_error
        if se is None:
            return None
        n = self.rows
        most = self.cluster_size_sq / n
        p = self.mean
        binomial = p * (1.0 - p) / n
        deff = most if binomial <= 0.0 else min(most, max(1.0, se * se / binomial))
        return n / deff

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson's interval of the mean over :attr:`effective_rows` (see the module).

        With one row per cluster this is Wilson's interval over the rows; with clusters it is
        at least as wide. With fewer than two clusters nothing is known of the spread: the
        interval is [0, 1].
        """
        normal_quantile(confidence)
        effective = self.effective_rows
        if effective is None:
            return (0.0, 1.0)
        return wilson_interval(self.mean * effective, effective, confidence)


class MomentsCounter:
    """Accumulates closed clusters into a :class:`ClusteredMean`."""

    __slots__ = ("cluster_cross", "cluster_size_sq", "cluster_sq", "clusters", "rows", "total")

    def __init__(self) -> None:
        self.rows = 0
        self.clusters = 0
        self.total = self.cluster_sq = self.cluster_cross = self.cluster_size_sq = 0.0

    def add_cluster(self, size: int, value: float) -> None:
        """Count one closed cluster of ``size`` rows whose values sum to ``value``."""
        self.rows += size
        self.total += value
        self.clusters += 1
        self.cluster_sq += value * value
        self.cluster_cross += value * size
        self.cluster_size_sq += size * size

    def add_singletons(self, rows: int, passed: int) -> None:
        """Count ``rows`` clusters of one row each, ``passed`` of them worth 1 and the rest 0:
        ``add_cluster(1, 1.0)`` ``passed`` times and ``add_cluster(1, 0.0)`` for the others."""
        self.rows += rows
        self.total += passed
        self.clusters += rows
        self.cluster_sq += passed
        self.cluster_cross += passed
        self.cluster_size_sq += rows

    def absorb(self, other: MomentsCounter) -> None:
        """Add another counter's clusters (disjoint from this one's)."""
        self.rows += other.rows
        self.total += other.total
        self.clusters += other.clusters
        self.cluster_sq += other.cluster_sq
        self.cluster_cross += other.cluster_cross
        self.cluster_size_sq += other.cluster_size_sq

    def copy(self) -> MomentsCounter:
        """An independent copy."""
        clone = MomentsCounter()
        clone.absorb(self)
        return clone

    def freeze(self) -> ClusteredMean:
        """The sums as a value."""
        return ClusteredMean(
            self.rows,
            self.total,
            self.clusters,
            self.cluster_sq,
            self.cluster_cross,
            self.cluster_size_sq,
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased chance that at least one of ``k`` runs passes: 1 − C(n−c, k) / C(n, k).

    Args:
        n: Runs made.
        c: Runs that passed.
        k: Runs drawn (1 <= k <= n).
    """
    _check_runs(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased chance that all of ``k`` runs pass (pass^k): C(c, k) / C(n, k)."""
    _check_runs(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_runs(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


@dataclass(frozen=True, slots=True)
class Kappa:
    """Cohen's kappa of two raters over two categories, and its large-sample standard error.

    Attributes:
        kappa: (observed agreement − chance agreement) / (1 − chance agreement).
        standard_error: The asymptotic standard error (Fleiss, Cohen and Everitt, 1969).
        observed: The observed agreement (the accuracy).
        expected: The agreement expected by chance from the raters' margins.
        rows: The items rated (0 when unknown).
    """

    kappa: float
    standard_error: float
    observed: float
    expected: float
    rows: int = 0

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """kappa ± z·SE, clipped to [-1, 1].

        Where the standard error is 0 (perfect agreement), that interval would be the point
        [1.00, 1.00]; it is then Wilson's interval of the observed agreement over the rows,
        mapped to kappa with the chance agreement held fixed: (p − pe) / (1 − pe).
        """
        z = normal_quantile(confidence)
        low = max(-1.0, self.kappa - z * self.standard_error)
        high = min(1.0, self.kappa + z * self.standard_error)
        if self.standard_error == 0.0 and self.rows:
            agreed_low, agreed_high = wilson_interval(
                self.observed * self.rows, self.rows, confidence
            )
            scale = 1.0 - self.expected
            low = min(low, max(-1.0, (agreed_low - self.expected) / scale))
            high = max(high, min(1.0, (agreed_high - self.expected) / scale))
        return (low, high)


def cohen_kappa(table: tuple[tuple[int, int], tuple[int, int]]) -> Kappa | None:
    """Cohen's kappa of a 2×2 table of counts (rows: one rater, columns: the other).

    The variance is Fleiss, Cohen and Everitt's (1969) large-sample variance, the one
    statsmodels' ``cohens_kappa`` reports as ``std_kappa``::

        var = (A + B − C) / ((1 − pe)² n)
        A = Σ_i p_ii (1 − (p_i. + p_.i)(1 − κ))²
        B = (1 − κ)² Σ_{i≠j} p_ij (p_.i + p_j.)²
        C = (κ − pe (1 − κ))²

    Returns:
        ``None`` for an empty table, or when a rater put every item in one category: with
        both raters so, chance agreement is 1 and kappa is 0 / 0; with one, kappa is 0 by
        construction and its standard error 0, an interval of [0.00, 0.00] that says nothing
        of the other rater yet reads as certainty.
    """
    n = sum(sum(row) for row in table)
    if n == 0:
        return None
    p = [[table[i][j] / n for j in range(2)] for i in range(2)]
    rows = [p[i][0] + p[i][1] for i in range(2)]
    cols = [p[0][j] + p[1][j] for j in range(2)]
    if 0.0 in rows or 0.0 in cols:
        return None
    observed = p[0][0] + p[1][1]
    expected = rows[0] * cols[0] + rows[1] * cols[1]
    kappa = (observed - expected) / (1.0 - expected)
    a = math.fsum(p[i][i] * (1.0 - (rows[i] + cols[i]) * (1.0 - kappa)) ** 2 for i in range(2))
    b = (1.0 - kappa) ** 2 * math.fsum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j
    )
    c = (kappa - expected * (1.0 - kappa)) ** 2
    variance = (a + b - c) / ((1.0 - expected) ** 2 * n)
    return Kappa(kappa, math.sqrt(max(variance, 0.0)), observed, expected, n)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of items each rated by the same number of raters.

    ``counts`` holds one row per item: how many raters put it in each category. With n
    raters per item, N items and p_j the share of all ratings in category j::

        P_i = (Σ_j n_ij² − n) / (n (n − 1)),  P̄ = mean P_i,  Pe = Σ_j p_j²
        κ = (P̄ − Pe) / (1 − Pe)

    Returns:
        ``None`` without items, with fewer than two raters, or when every rating is of one
        category (chance agreement is 1 and kappa 0 / 0).

    Raises:
        ValueError: Items rated by different numbers of raters, or a negative count.
    """
    if not counts:
        return None
    raters = sum(counts[0])
    for row in counts:
        if sum(row) != raters or any(count < 0 for count in row):
            raise ValueError(
                f"Fleiss' kappa needs every item rated by the same number of raters ({raters}), "
                f"got counts {list(row)}"
            )
    if raters < 2:
        return None
    items = len(counts)
    agreement = math.fsum(
        (math.fsum(count * count for count in row) - raters) / (raters * (raters - 1))
        for row in counts
    )
    observed = agreement / items
    shares = [math.fsum(row[j] for row in counts) / (items * raters) for j in range(len(counts[0]))]
    expected = math.fsum(share * share for share in shares)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)
