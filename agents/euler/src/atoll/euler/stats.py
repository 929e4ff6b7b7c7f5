"""The statistics reports and comparisons print: pass@k, medians, exact Fisher tests.

pass@k is the unbiased estimator of Chen et al. (2021): with n attempts of
which c passed, the probability that at least one of k attempts drawn
without replacement passes, 1 - C(n-c, k) / C(n, k), computed as a product so
that large n stays exact in floating point. Fisher's exact test is scipy's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n attempts with c passes; ValueError when k > n."""
    if not 0 <= c <= n:
        raise ValueError(f"passes c={c} must lie between 0 and n={n}")
    if k < 1 or k > n:
        raise ValueError(f"k={k} needs at least k attempts (n={n})")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i)
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(groups: Sequence[tuple[int, int]], k: int) -> float | None:
    """pass@k averaged over tasks (each an (n, c) pair) that have at least k attempts."""
    values = [pass_at_k(n, c, k) for n, c in groups if n >= k]
    return sum(values) / len(values) if values else None


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class FisherResult:
    odds_ratio: float
    p_two_sided: float
    p_b_greater: float  # one-sided: B's pass rate exceeds A's


def fisher(passes_a: int, n_a: int, passes_b: int, n_b: int) -> FisherResult:
    """Fisher's exact test on the 2x2 table [[passes_a, fails_a], [passes_b, fails_b]]."""
    from scipy.stats import fisher_exact

    table = [[passes_a, n_a - passes_a], [passes_b, n_b - passes_b]]
    odds, p_two = fisher_exact(table, alternative="two-sided")
    # odds = (pA * fB) / (fA * pB) < 1 when B passes more often.
    _, p_less = fisher_exact(table, alternative="less")
    return FisherResult(float(odds), float(p_two), float(p_less))
