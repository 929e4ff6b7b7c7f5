"""The promotion's decision test: per-problem pairs, exact p-values, Holm's adjustment."""

from __future__ import annotations

import itertools

import pytest

from atoll.euler import stats
from atoll.pi_train.promotion.paired_test import (
    EXACT_LIMIT,
    Counts,
    counts_by_unit,
    holm,
    paired_test,
    smallest_p,
)


def _sides(pairs: list[tuple[int, int]], attempts: int = 4) -> tuple[dict, dict]:
    """(baseline, candidate) counts for problems 1..n from (baseline passes, candidate passes)."""
    baseline = {str(i): Counts(attempts, a) for i, (a, _) in enumerate(pairs, 1)}
    candidate = {str(i): Counts(attempts, b) for i, (_, b) in enumerate(pairs, 1)}
    return baseline, candidate


def _enumerated(differences: list[float]) -> float:
    """The one-sided sign-flip p-value by brute force, for comparison."""
    observed = sum(differences)
    hits = sum(
        sum(s * d for s, d in zip(signs, differences, strict=True)) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(differences))
    )
    return hits / 2 ** len(differences)


def test_one_learnt_problem_is_one_piece_of_evidence_however_many_attempts() -> None:
    """Eight attempts passing on one problem: pooled, they look like strong evidence."""
    pairs = [(0, 8)] + [(0, 0)] * 9
    baseline, candidate = _sides(pairs, attempts=8)
    result = paired_test(baseline, candidate)
    assert result.p_greater == 0.5 and result.method == "exact" and result.differing == 1
    assert result.delta == pytest.approx(0.1)
    pooled = stats.fisher(0, 80, 8, 80)
    assert pooled.p_b_greater < 0.01  # what counting attempts as independent would claim


@pytest.mark.parametrize(
    "pairs",
    [
        [(0, 1)] * 10,
        [(1, 3), (2, 1), (0, 0), (4, 4), (0, 2), (1, 2)],
        [(3, 1), (2, 0), (1, 2)],
        [(0, 4), (0, 3), (1, 0)],
    ],
)
def test_the_p_value_is_the_exact_sign_flip_probability(pairs: list[tuple[int, int]]) -> None:
    baseline, candidate = _sides(pairs)
    result = paired_test(baseline, candidate)
    differences = [(b - a) / 4 for a, b in pairs]
    assert result.p_greater == pytest.approx(_enumerated([d for d in differences if d]))
    assert result.delta == pytest.approx(sum(differences) / len(differences))
    assert result.method == "exact"


def test_no_difference_gives_p_one_and_a_worse_candidate_a_large_p() -> None:
    same = _sides([(2, 2), (1, 1)])
    assert paired_test(*same).p_greater == 1.0 and paired_test(*same).delta == 0.0
    worse = _sides([(4, 0), (3, 1), (2, 0)])
    assert paired_test(*worse).p_greater == 1.0
    assert paired_test(*_sides([(4, 0)])).p_greater == 1.0


def test_units_one_side_lacks_are_left_out_and_named() -> None:
    baseline = {"91": Counts(4, 0), "92": Counts(4, 1), "93": Counts(4, 0)}
    candidate = {"91": Counts(4, 2), "92": Counts(4, 1), "94": Counts(4, 4)}
    result = paired_test(baseline, candidate)
    assert [u["unit"] for u in result.units] == ["91", "92"]
    assert result.unpaired == ["93", "94"]
    assert result.delta == pytest.approx(0.25)
    assert paired_test({}, {}).p_greater is None and paired_test({}, {}).method == "none"


def test_many_differing_problems_are_sampled_with_a_fixed_seed() -> None:
    pairs = [(0, 1)] * (EXACT_LIMIT + 4) + [(1, 0)] * 2
    result = paired_test(*_sides(pairs))
    assert result.method == "monte-carlo"
    assert result.p_greater is not None and result.p_greater < 0.01
    assert paired_test(*_sides(pairs)).p_greater == result.p_greater  # reproducible
    described = result.to_json("problem")
    assert described["resamples"] and described["seed"] == 0


def test_counts_come_from_rows_by_problem() -> None:
    rows = [
        {"problem": 91, "passed": True},
        {"problem": 91, "passed": False},
        {"problem": 92, "passed": False},
    ]
    assert counts_by_unit(rows) == {"91": Counts(2, 1), "92": Counts(1, 0)}


def test_the_smallest_p_value_bounds_what_a_rule_can_ask() -> None:
    assert smallest_p(1) == 0.5 and smallest_p(4) == 1 / 16 and smallest_p(10) == 1 / 1024
    assert smallest_p(0) == 1.0 and smallest_p(EXACT_LIMIT + 1) < 2.0**-EXACT_LIMIT
    best = _sides([(0, 4)] * 4)
    assert paired_test(*best).p_greater == smallest_p(4)


@pytest.mark.parametrize(
    ("p", "adjusted"),
    [
        ([0.01, 0.04, 0.03, 1.0, 1.0], [0.05, 0.12, 0.12, 1.0, 1.0]),
        ([0.2], [0.2]),
        ([0.5, 0.4], [0.8, 0.8]),
        ([0.001, 0.001, 0.5], [0.003, 0.003, 0.5]),
    ],
)
def test_holm_adjusts_step_down(p: list[float], adjusted: list[float]) -> None:
    assert holm(p) == pytest.approx(adjusted)


def test_no_decision_is_undone_when_the_comparisons_not_made_yet_arrive() -> None:
    """Comparisons not made count as 1; whatever they turn out to be, no decision is undone."""
    earlier = holm([0.01, 1.0, 1.0])[0]
    for later in itertools.product([0.0, 0.005, 0.02, 0.5, 1.0], repeat=2):
        assert holm([0.01, *later])[0] <= earlier
