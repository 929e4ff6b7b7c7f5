"""pass@k against hand-computed values; Fisher's exact test against known tables."""

from __future__ import annotations

import math

import pytest

from atoll.euler import stats


@pytest.mark.parametrize(
    ("n", "c", "k", "value"),
    [
        (10, 3, 1, 0.3),  # pass@1 is the pass fraction
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (4, 1, 2, 1 - 3 / 6),  # 1 - C(3,2)/C(4,2)
        (6, 3, 3, 1 - 1 / 20),  # 1 - C(3,3)/C(6,3)
        (4, 0, 2, 0.0),
        (5, 4, 2, 1.0),  # n - c < k: every draw of 2 holds a pass
        (3, 3, 3, 1.0),
    ],
)
def test_pass_at_k(n: int, c: int, k: int, value: float) -> None:
    assert stats.pass_at_k(n, c, k) == pytest.approx(value, abs=1e-12)


def test_pass_at_k_large_n_matches_combinatorics() -> None:
    n, c, k = 200, 17, 10
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert stats.pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


def test_pass_at_k_needs_k_attempts() -> None:
    with pytest.raises(ValueError):
        stats.pass_at_k(3, 1, 4)
    assert stats.mean_pass_at_k([(3, 1), (10, 5)], 5) == pytest.approx(stats.pass_at_k(10, 5, 5))
    assert stats.mean_pass_at_k([(3, 1)], 5) is None


@pytest.mark.slow
def test_fisher_lady_tasting_tea() -> None:
    # Fisher's tea-tasting table [[3, 1], [1, 3]]: two-sided p = 34/70, one-sided p = 17/70.
    result = stats.fisher(3, 4, 1, 4)
    assert result.p_two_sided == pytest.approx(34 / 70)
    assert result.odds_ratio == pytest.approx(9.0)
    # B (1 of 4) is not better than A (3 of 4): p(B > A) = P(X <= 3) for A's cell = 69/70.
    assert result.p_b_greater == pytest.approx(69 / 70)
    reverse = stats.fisher(1, 4, 3, 4)
    assert reverse.p_b_greater == pytest.approx(17 / 70)


@pytest.mark.slow
def test_fisher_hand_computed_table() -> None:
    # [[0, 5], [5, 0]]: the most extreme table of its margins; two-sided p = 2 / C(10, 5) = 2/252.
    result = stats.fisher(0, 5, 5, 5)
    assert result.p_two_sided == pytest.approx(2 / 252)
    assert result.p_b_greater == pytest.approx(1 / 252)
    # R: fisher.test(matrix(c(8, 2, 1, 5), 2)) gives p-value = 0.03497
    textbook = stats.fisher(8, 10, 1, 6)
    assert textbook.p_two_sided == pytest.approx(0.034965, abs=1e-6)


def test_median() -> None:
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([]) is None
