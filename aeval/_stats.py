"""The statistics behind every score: clustered standard errors and repeat estimators.

A score is the mean of 0/1 row values (1 for a passed row). Rows of one sample (its strategies
and its repeats) are not independent, so the standard error treats each sample as a cluster,
after Miller, "Adding Error Bars to Evals" (arXiv 2411.00640)::

    SE = sqrt(C / (C - 1)) * (1 / n) * sqrt( sum_c ( sum_{i in c} (s_i - mean) )^2 )

with n rows in C clusters. The factor C / (C - 1) is the usual small-sample correction (CR1);
with one row per cluster SE is then the textbook sqrt(s^2 / n) with the sample variance s^2.
Expanding the square lets the sums be kept in O(1) memory per closed cluster:
``sum_c (S_c - n_c * mean)^2 = sum S_c^2 - 2 * mean * sum S_c n_c + mean^2 * sum n_c^2``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

__all__ = ["ClusteredMean", "MomentsCounter", "normal_quantile", "pass_at_k", "pass_hat_k"]


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

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The normal-approximation interval of the mean, clipped to [0, 1].

        With fewer than two clusters nothing is known of the spread: the interval is [0, 1].
        """
        z = normal_quantile(confidence)
        se = self.standard_error
        if se is None:
            return (0.0, 1.0)
        mean = self.mean
        return (max(0.0, mean - z * se), min(1.0, mean + z * se))


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
