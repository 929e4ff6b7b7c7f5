"""The discovery verifier's objectives against values known without it.

Closed forms worked out by hand, constructions others published with their
stated values (tests/discovery/data, see its README), and small brute-force
computations written independently of the verifier (plain loops over Python
floats, Simpson's rule for the piecewise-linear norms). Then the invalid
constructions the verifier must refuse: overlaps and escapes by 1e-9, NaN,
empty, negative, wrongly shaped.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from atoll.discovery.verify import (
    AC1,
    AC2,
    CIRCLES,
    ERDOS,
    MAX_VALUES,
    Invalid,
    evaluate,
    objective_ac1,
    objective_ac2,
    objective_circles,
    objective_erdos,
)

DATA = Path(__file__).parent / "data"


def _data(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _rounded_up(value: float, places: int = 6) -> float:
    """An upper bound as its publisher states it: rounded up at `places` decimals."""
    return math.ceil(value * 10**places) / 10**places


# --- Erdős minimum overlap ------------------------------------------------------------------


def _overlap_brute_force(h: list[float]) -> float:
    """C5 by explicit shifts, Python floats only: rescale to sum n/2, then every shift's sum."""
    n = len(h)
    total = math.fsum(h)
    h = [v * (n / 2) / total for v in h]
    best = -math.inf
    for k in range(-(n - 1), n):
        terms = [h[i] * (1 - h[i + k]) for i in range(n) if 0 <= i + k < n]
        best = max(best, math.fsum(terms) * 2 / n)
    return best


def test_erdos_closed_forms():
    assert objective_erdos([0.5] * 200) == pytest.approx(0.5, abs=1e-15)
    # h = 1 on [0, 1], 0 on [1, 2]: shifted by 1, all of h meets 1 - h, so C5 = 1.
    assert objective_erdos([1.0] * 50 + [0.0] * 50) == pytest.approx(1.0, abs=1e-15)
    # A constant 1/4 is rescaled to 1/2 (its integral becomes 1): the same C5 as 1/2.
    assert objective_erdos([0.25] * 80) == pytest.approx(0.5, abs=1e-15)


def test_erdos_agrees_with_explicit_shifts_on_random_steps():
    draw = random.Random(7)
    for n in (1, 2, 7, 40):
        h = [draw.uniform(0.2, 0.6) for _ in range(n)]
        assert objective_erdos(h) == pytest.approx(_overlap_brute_force(h), abs=1e-12)


def test_erdos_published_constructions_have_their_stated_bounds():
    ttt = _data("ttt_discover_erdos_sequence.json")["sequence"]
    assert len(ttt) == 600
    assert _rounded_up(objective_erdos(ttt)) == 0.380876
    half = _data("haugland_erdos_half.json")["half"]
    haugland = half + half[-2::-1]  # 51 steps, symmetric about the middle one
    assert len(haugland) == 51
    assert _rounded_up(objective_erdos(haugland)) == 0.380927


@pytest.mark.parametrize(
    ("h", "why"),
    [
        ([], "empty"),
        ([0.5, -1e-9, 0.5], r"must lie in \[0, 1\]"),
        ([0.5, 1 + 1e-9], r"must lie in \[0, 1\]"),
        ([0.0, 0.0], "0 everywhere"),
        ([1.0, 0.0, 0.0], "after rescaling"),  # sum 1 < 3/2: scaled up by 3/2, past 1
        ([0.5, float("nan")], "not a finite number"),
        ([0.5, True], "not a number"),
        ("0.5", "must be a list"),
        ([0.5] * (MAX_VALUES + 1), "at most"),
    ],
)
def test_erdos_invalid_constructions(h, why):
    with pytest.raises(Invalid, match=why):
        objective_erdos(h)


# --- the autocorrelation inequalities -------------------------------------------------------


def _autoconvolution(a: list[float]) -> list[float]:
    return [
        math.fsum(a[i] * a[k - i] for i in range(len(a)) if 0 <= k - i < len(a))
        for k in range(2 * len(a) - 1)
    ]


def _ac1_brute_force(a: list[float]) -> float:
    return 2 * len(a) * max(_autoconvolution(a)) / math.fsum(a) ** 2


def _ac2_by_simpson(a: list[float]) -> float:
    """Simpson's rule on each segment (exact for the square of a line) and the trapezoid rule."""
    c = _autoconvolution(a)
    y = [0.0, *c, 0.0]
    h = 1 / (len(y) - 1)
    l2 = math.fsum(h / 6 * (p**2 + 4 * ((p + q) / 2) ** 2 + q**2) for p, q in itertools.pairwise(y))
    l1 = math.fsum(h / 2 * (p + q) for p, q in itertools.pairwise(y))
    return l2 / (l1 * max(c))


def test_ac1_closed_forms():
    assert objective_ac1([1.0] * 100) == 2.0  # a triangle peaking at n, sum n
    assert objective_ac1([3]) == 2.0
    assert objective_ac1([1, 0, 1]) == pytest.approx(3.0, abs=1e-15)  # peak 2, sum 2, n 3


def test_ac2_closed_forms():
    assert objective_ac2([1.0] * 100) == pytest.approx(2 / 3, abs=1e-15)  # a triangle
    assert objective_ac2([5]) == pytest.approx(2 / 3, abs=1e-15)
    # c = 1, 0, 2, 0, 1: ||g||_2^2 = 2/3, ||g||_1 = 2/3, ||g||_inf = 2.
    assert objective_ac2([1, 0, 1]) == pytest.approx(1 / 2, abs=1e-15)


def test_the_autocorrelation_bounds_agree_with_independent_computations():
    draw = random.Random(11)
    for n in (1, 2, 9, 60):
        a = [draw.random() for _ in range(n)]
        assert objective_ac1(a) == pytest.approx(_ac1_brute_force(a), rel=1e-12)
        assert objective_ac2(a) == pytest.approx(_ac2_by_simpson(a), rel=1e-12)
        scaled = [v * 1e6 for v in a]  # both ratios are scale-invariant
        assert objective_ac1(scaled) == pytest.approx(objective_ac1(a), rel=1e-12)
        assert objective_ac2(scaled) == pytest.approx(objective_ac2(a), rel=1e-12)


@pytest.mark.parametrize("objective", [objective_ac1, objective_ac2])
@pytest.mark.parametrize(
    ("heights", "why"),
    [
        ([], "empty"),
        ([1.0, -1e-9], "must be >= 0"),
        ([0, 0.0], "0 everywhere"),
        ([1.0, float("nan")], "not a finite number"),
        ([1.0, float("inf")], "not a finite number"),
        ([1.0, None], "not a number"),
        ({"a": 1}, "must be a list"),
        ([1.0, 10**400], "too large"),
    ],
)
def test_autocorrelation_invalid_constructions(objective, heights, why):
    with pytest.raises(Invalid, match=why):
        objective(heights)


# --- circle packing -------------------------------------------------------------------------


def _grid(count: int) -> list[list[float]]:
    side = math.isqrt(count - 1) + 1
    r = 1 / (2 * side)
    return [[(2 * (i % side) + 1) * r, (2 * (i // side) + 1) * r, r] for i in range(count)]


def test_circle_packing_closed_forms_and_a_published_packing():
    assert objective_circles(_grid(26), 26) == pytest.approx(26 / 12, abs=1e-14)
    assert objective_circles(_grid(32), 32) == pytest.approx(32 / 12, abs=1e-14)
    assert objective_circles([[0.5, 0.5, 0.5]], 1) == 0.5  # touches all four sides
    published = _data("ttt_discover_circles_26.json")
    assert objective_circles(published["circles"], 26) == published["sum_radii"]


def test_touching_within_the_tolerance_is_allowed():
    # Two circles of radius 1/4 side by side, overlapping by 1e-13 and leaving the square by
    # 1e-13: within the stated tolerance of 1e-12.
    circles = [[0.25, 0.5, 0.25 + 5e-14], [0.75, 0.5, 0.25 + 5e-14]]
    assert objective_circles(circles, 2) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize(
    ("circles", "why"),
    [
        ([[0.25, 0.5, 0.25 + 5e-10], [0.75, 0.5, 0.25 + 5e-10]], "leaves the unit square"),
        ([[0.3, 0.5, 0.2], [0.7, 0.5, 0.2 + 1e-9]], "overlap by"),
        ([[0.5, 0.5, 0.1], [0.5, 0.5, 0.1]], "overlap by"),
        ([[1e-9 - 0.1, 0.5, 0.1], [0.7, 0.5, 0.1]], "leaves the unit square"),
        ([[0.2, 0.2, -0.1], [0.7, 0.7, 0.1]], "negative radius"),
        ([[0.2, 0.2, float("nan")], [0.7, 0.7, 0.1]], "not a finite number"),
        ([[0.2, 0.2, 0.1]], "exactly 2"),
        ([], "exactly 2"),
        ([[0.2, 0.2], [0.7, 0.7, 0.1]], r"not \[x, y, r\]"),
        ([[0.2, 0.2, "0.1"], [0.7, 0.7, 0.1]], "not a number"),
    ],
)
def test_circle_packing_invalid_constructions(circles, why):
    with pytest.raises(Invalid, match=why):
        objective_circles(circles, 2)


# --- the reward: bounded, and in the objective's order --------------------------------------


def test_rewards_follow_the_objective_in_each_problems_direction():
    erdos = [[0.5] * 20, [1.0] * 10 + [0.0] * 10, _data("haugland_erdos_half.json")["half"]]
    erdos[2] = erdos[2] + erdos[2][-2::-1]
    heights = [[1.0] * 8, [1, 0, 1], [0.63, 0.19, 0.06, 0.58, 0.21, 0.23, 0.63, 1.0]]
    cases = [
        ({"problem": ERDOS}, [{"h": h} for h in erdos], "min"),
        ({"problem": AC1}, [{"heights": a} for a in heights], "min"),
        ({"problem": AC2}, [{"heights": a} for a in heights], "max"),
        ({"problem": CIRCLES, "circles": 26}, [{"circles": _grid(26)}], "max"),
    ]
    for problem, outputs, direction in cases:
        verdicts = [evaluate(problem, output) for output in outputs]
        by_score = sorted(verdicts, key=lambda v: v.raw_score, reverse=direction == "max")
        by_reward = sorted(verdicts, key=lambda v: v.reward, reverse=True)
        assert by_score == by_reward, problem
        assert all(0 < v.reward < 4 for v in verdicts)  # every bound in the instructions


def test_the_reward_formulas():
    assert evaluate({"problem": ERDOS}, {"h": [0.5] * 4}).reward == 1 / (1e-8 + 0.5)
    assert evaluate({"problem": AC1}, {"heights": [1, 1]}).reward == 5 / (1e-8 + 2.0)
    ac2 = evaluate({"problem": AC2}, {"heights": [1, 0, 1]})
    assert ac2.reward == ac2.raw_score
    circles = evaluate({"problem": CIRCLES, "circles": 26}, {"circles": _grid(26)})
    assert circles.reward == circles.raw_score


@pytest.mark.parametrize("output", [{}, {"H": [0.5]}, {"heights": [0.5]}, [0.5], None, {"h": None}])
def test_an_output_without_the_construction_is_invalid(output):
    with pytest.raises(Invalid):
        evaluate({"problem": ERDOS}, output)
