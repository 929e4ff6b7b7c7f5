"""training=tinker's pure pieces: the entropic adaptive-β advantage, KL shaping and the gate.

Expected figures are computed here independently of the module under test:
the KL to uniform with scipy's `softmax`/`rel_entr`, its ln 2 root with
`brentq`, and the leave-one-out advantages from their closed form.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import rel_entr, softmax

from atoll.guidance_ttt.services.training_barrier import (
    TrainingGateFailed,
    TrainingInvariantFailed,
)
from atoll.guidance_ttt.state.jsonl_journal import Journal
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.training.advantage import entropic_advantages, kl_shaped
from atoll.guidance_ttt.training.tinker_barrier import check_update, checkpoint_rows, policy_start
from atoll.guidance_ttt.training.tinker_policy import PolicyStart

LN2 = math.log(2.0)
# The bound the reference's doubling stops at: the first power of two at or above 1e6.
BETA_BOUND = 2.0**20
EPS = 1e-12


# ----- independent reference ---------------------------------------------------------------


def _kl(rewards: list[float], beta: float) -> float:
    """KL(softmax(β·r) ‖ uniform), with scipy."""
    r = np.asarray(rewards, dtype=np.float64)
    q = softmax(beta * (r - r.max()))
    return float(np.sum(rel_entr(q, np.full_like(q, 1.0 / len(r)))))


def _root_beta(rewards: list[float]) -> float:
    """The β at which the KL is ln 2, by Brent's method (needs k >= 3 and a spread)."""
    hi = 1.0
    while _kl(rewards, hi) < LN2:
        hi *= 2.0
    return brentq(lambda b: _kl(rewards, b) - LN2, 0.0, hi, xtol=1e-300, rtol=1e-15, maxiter=500)


def _closed_form(rewards: list[float], beta: float) -> list[float]:
    """A_i = e_i / (Z_{-i} + 1e-12) − 1, e_i = exp(β(r_i − max r)), Z_{-i} the others' mean."""
    top = max(rewards)
    e = [math.exp(beta * (r - top)) for r in rewards]
    k = len(e)
    return [w / ((sum(e) - w) / (k - 1) + EPS) - 1.0 for w in e]


# ----- entropic advantages -----------------------------------------------------------------


def test_equal_rewards_hit_the_bound_and_give_zero_advantages() -> None:
    solved = entropic_advantages([0.25, 0.25, 0.25, 0.25])
    assert solved.beta == BETA_BOUND == 1048576.0
    assert len(solved.advantages) == 4
    for a in solved.advantages:
        assert abs(a) < 1e-9


def test_a_single_sample_has_beta_zero_and_no_advantage() -> None:
    solved = entropic_advantages([0.7])
    assert solved.beta == 0.0
    assert len(solved.advantages) == 1
    # 1 / (1 + 1e-12) − 1: zero up to the normaliser's epsilon.
    assert solved.advantages[0] == pytest.approx(-1e-12, abs=1e-15)


def test_an_empty_group_has_nothing() -> None:
    solved = entropic_advantages([])
    assert solved.beta == 0.0
    assert solved.advantages == ()


def test_two_distinct_rewards_give_the_worse_minus_one_and_the_better_about_1e12() -> None:
    # For k = 2 the exact KL only approaches ln 2; in floating point it rounds up to ln 2 once
    # exp(−βΔ) is negligible, so the search bisects to a finite β (the float32 reference
    # does the same, earlier). Either way the worse member's weight is far below the 1e-12
    # epsilon, so the better member's advantage is 1/1e-12 − 1.
    rewards = [0.0, 1.0]
    solved = entropic_advantages(rewards)
    worse, better = solved.advantages
    assert 0.0 < solved.beta <= BETA_BOUND
    assert math.exp(-solved.beta * 1.0) < 1e-15
    assert _kl(rewards, solved.beta) == pytest.approx(LN2, abs=1e-12)
    assert worse == pytest.approx(-1.0, abs=1e-9)
    assert better == pytest.approx(1e12, rel=1e-5)
    # Order within the group does not matter.
    assert entropic_advantages([1.0, 0.0]).advantages == pytest.approx((better, worse))


def test_two_nearly_equal_rewards_stop_at_the_bound() -> None:
    # A spread so small that even β = 2**20 leaves the KL well below ln 2: the best effort.
    rewards = [0.0, 1e-6]
    solved = entropic_advantages(rewards)
    assert solved.beta == BETA_BOUND
    assert _kl(rewards, BETA_BOUND) < LN2 - 0.1
    assert list(solved.advantages) == pytest.approx(_closed_form(rewards, BETA_BOUND), rel=1e-12)
    # exp(−2**20 · 1e-6) = e^{−1.048576}: A = (−1 + e^{−x}, e^{x} − 1), far from ±1e12.
    x = BETA_BOUND * 1e-6
    assert solved.advantages[0] == pytest.approx(math.exp(-x) - 1.0, rel=1e-9)
    assert solved.advantages[1] == pytest.approx(math.exp(x) - 1.0, rel=1e-9)


@pytest.mark.parametrize(
    "rewards",
    [
        [0.1, 0.4, 0.9],
        [0.2, 0.3, 0.5, 0.9],
        [1.0, 1.0, 1.0, 5.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        [-3.0, 2.5, 0.75, 0.7, 2.4],
    ],
)
def test_beta_solves_kl_equals_ln2_and_advantages_match_the_closed_form(
    rewards: list[float],
) -> None:
    solved = entropic_advantages(rewards)
    expected_beta = _root_beta(rewards)
    assert solved.beta == pytest.approx(expected_beta, rel=1e-9)
    assert _kl(rewards, solved.beta) == pytest.approx(LN2, abs=1e-9)
    assert list(solved.advantages) == pytest.approx(
        _closed_form(rewards, expected_beta), rel=1e-8, abs=1e-9
    )


def test_a_hand_checked_two_level_group() -> None:
    # Rewards (0, 0, 0, 1): with t = exp(−β), q = (t, t, t, 1) / (1 + 3t) and
    # KL = ln 4 − H(q). The advantages are 1/t − 1 for the top and t / ((1 + 2t)/3) − 1 below.
    solved = entropic_advantages([0.0, 0.0, 0.0, 1.0])
    t = math.exp(-solved.beta)
    q_top, q_low = 1 / (1 + 3 * t), t / (1 + 3 * t)
    kl = math.log(4) + q_top * math.log(q_top) + 3 * q_low * math.log(q_low)
    assert kl == pytest.approx(LN2, abs=1e-9)
    low, top = 3 * t / (1 + 2 * t) - 1, 1 / (t + EPS) - 1
    assert solved.advantages == pytest.approx((low, low, low, top), rel=1e-9)


BASE = [0.1, 0.4, 0.9, 0.35]


@pytest.mark.parametrize("scale", [1000.0, 1e-5, 37.5])
def test_advantages_are_scale_invariant_and_beta_scales_inversely(scale: float) -> None:
    reference = entropic_advantages(BASE)
    scaled = entropic_advantages([r * scale for r in BASE])
    assert scaled.beta == pytest.approx(reference.beta / scale, rel=1e-7)
    assert scaled.advantages == pytest.approx(reference.advantages, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("shift", [-50.0, 1e3, -0.9])
def test_advantages_are_shift_invariant(shift: float) -> None:
    reference = entropic_advantages(BASE)
    shifted = entropic_advantages([r + shift for r in BASE])
    assert shifted.beta == pytest.approx(reference.beta, rel=1e-7)
    assert shifted.advantages == pytest.approx(reference.advantages, rel=1e-6, abs=1e-6)


def test_a_spread_too_small_for_the_bound_is_not_scale_invariant() -> None:
    # The reference caps the doubling at 1e6: a spread of ~1e-6 needs β ≈ 5e6, so β is
    # the bound and the advantages are those of β = 2**20, not the scale-free ones.
    rewards = [r * 1e-6 for r in BASE]
    solved = entropic_advantages(rewards)
    assert _root_beta(rewards) > BETA_BOUND
    assert solved.beta == BETA_BOUND
    assert list(solved.advantages) == pytest.approx(_closed_form(rewards, BETA_BOUND), rel=1e-9)
    assert max(solved.advantages) < 0.5 * max(entropic_advantages(BASE).advantages)


@pytest.mark.parametrize(
    "rewards",
    [
        [0.1, 0.4, 0.9],
        [0.9, 0.1, 0.5, 0.3],
        [5.0, -1.0, 2.0, 2.0, 0.0, 3.5],
        [0.0, 0.0, 1.0, 1.0],
    ],
)
def test_a_higher_reward_has_a_higher_advantage(rewards: list[float]) -> None:
    advantages = entropic_advantages(rewards).advantages
    for i, (ri, ai) in enumerate(zip(rewards, advantages, strict=True)):
        for rj, aj in zip(rewards[i + 1 :], advantages[i + 1 :], strict=True):
            if ri > rj:
                assert ai > aj
            elif ri < rj:
                assert ai < aj
            else:
                assert ai == pytest.approx(aj, rel=1e-12)
    # A lone best has e = 1 above every other weight, so above their mean: A > 0. The
    # worst's weight is at most every other's, and below the best's: A < 0.
    top, bottom = max(rewards), min(rewards)
    if rewards.count(top) == 1:
        assert advantages[rewards.index(top)] > 0
    assert advantages[rewards.index(bottom)] < 0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_reward_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        entropic_advantages([0.1, bad, 0.3])


# ----- KL shaping --------------------------------------------------------------------------


def test_kl_shaping_by_hand() -> None:
    advantages = [[1.0, 1.0], [-0.5, -0.5, -0.5]]
    sampled = [[-1.0, -2.0], [-0.5, -1.0, -3.0]]
    base = [[-1.5, -2.5], [-1.0, -1.0, -2.0]]
    # d = [[0.5, 0.5], [0.5, 0.0, -1.0]], d̄ = 0.5 / 5 = 0.1; A_t += 0.2 · (0.1 − d_t).
    shaped, mean = kl_shaped(advantages, sampled, base, 0.2)
    assert mean == pytest.approx(0.1, abs=1e-15)
    assert len(shaped) == 2 and [len(row) for row in shaped] == [2, 3]
    assert shaped[0] == pytest.approx([0.92, 0.92], abs=1e-15)
    assert shaped[1] == pytest.approx([-0.58, -0.48, -0.28], abs=1e-15)
    # The inputs are left as they were.
    assert advantages == [[1.0, 1.0], [-0.5, -0.5, -0.5]]


def test_kl_shaping_with_zero_coefficient_only_reports_the_mean() -> None:
    shaped, mean = kl_shaped([[0.3, -0.2]], [[-1.0, -1.0]], [[-1.25, -2.0]], 0.0)
    assert shaped == [[0.3, -0.2]]
    assert mean == pytest.approx(0.625, abs=1e-15)


def test_kl_shaping_of_an_empty_batch() -> None:
    assert kl_shaped([], [], [], 0.5) == ([], 0.0)


def test_kl_shaping_refuses_mismatched_lengths() -> None:
    with pytest.raises(ValueError):
        kl_shaped([[1.0, 1.0]], [[-1.0]], [[-1.0]], 0.1)
    with pytest.raises(ValueError):
        kl_shaped([[1.0]], [[-1.0]], [[-1.0], [-2.0]], 0.1)


# ----- the training gate -------------------------------------------------------------------


def _answer(at: int = 3, **changes: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "step": at,
        "trained_steps": at + 1,
        "state_path": f"tinker://run/state-{at}",
        "sampler_path": f"tinker://run/sampler-{at}",
        "metrics": {"updated": True, "loss": 0.25},
    }
    answer.update(changes)
    return answer


PREVIOUS = "tinker://run/sampler-2"


def test_a_good_update_passes_the_gate() -> None:
    check_update(_answer(), 3, PREVIOUS, non_constant_groups=2)
    check_update(_answer(metrics={"updated": True, "loss": 0}), 3, PREVIOUS, 1)  # an int loss
    check_update(_answer(at=0), 0, "", 1)  # the first step has no previous sampler


@pytest.mark.parametrize(
    ("metrics", "reason"),
    [
        ({"updated": True, "loss": math.nan}, "not finite"),
        ({"updated": True, "loss": math.inf}, "not finite"),
        ({"updated": True, "loss": -math.inf}, "not finite"),
        ({"updated": True}, "not finite"),
        ({"updated": True, "loss": None}, "not finite"),
        ({"updated": True, "loss": "0.3"}, "not finite"),
        ({"updated": True, "loss": True}, "not finite"),
        ({"updated": False, "loss": 0.25}, "did not return"),
        ({"loss": 0.25}, "did not return"),
        ({"updated": "yes", "loss": 0.25}, "did not return"),
    ],
)
def test_a_bad_optimizer_step_fails_the_gate(metrics: dict[str, Any], reason: str) -> None:
    with pytest.raises(TrainingGateFailed, match=reason):
        check_update(_answer(metrics=metrics), 3, PREVIOUS, non_constant_groups=1)


def test_missing_metrics_fail_the_gate_when_something_was_trained() -> None:
    answer = _answer()
    del answer["metrics"]
    with pytest.raises(TrainingGateFailed, match="did not return"):
        check_update(answer, 3, PREVIOUS, 1)
    with pytest.raises(TrainingGateFailed, match="not finite"):
        check_update(_answer(metrics=[("updated", True)]), 3, PREVIOUS, 1)


def test_the_same_sampler_again_fails_the_gate() -> None:
    with pytest.raises(TrainingGateFailed, match="the new sampler is the old one"):
        check_update(_answer(sampler_path=PREVIOUS), 3, PREVIOUS, 1)
    # Even for a step with nothing to train: its row must name a fresh sampler.
    with pytest.raises(TrainingGateFailed, match="the new sampler is the old one"):
        check_update(_answer(sampler_path=PREVIOUS, metrics={}), 3, PREVIOUS, 0)


@pytest.mark.parametrize("key", ["state_path", "sampler_path"])
@pytest.mark.parametrize("value", [None, "", 7, "absent"])
def test_a_save_without_paths_fails_the_gate(key: str, value: Any) -> None:
    answer = _answer()
    if value == "absent":
        del answer[key]
    else:
        answer[key] = value
    with pytest.raises(TrainingGateFailed, match=f"no {key.replace('_', ' ')} was saved"):
        check_update(answer, 3, PREVIOUS, 1)


@pytest.mark.parametrize(
    "changes",
    [
        {"trained_steps": 3},
        {"trained_steps": 5},
        {"trained_steps": None},
        {"step": 2},
        {"step": "3"},
        {"step": 2, "trained_steps": 3},
    ],
)
def test_the_wrong_step_count_fails_the_gate(changes: dict[str, Any]) -> None:
    with pytest.raises(TrainingGateFailed, match="expected step 3 to 4"):
        check_update(_answer(**changes), 3, PREVIOUS, 1)


def test_a_step_without_contrast_passes_with_new_paths_and_no_update() -> None:
    check_update(_answer(metrics={"updated": False}), 3, PREVIOUS, non_constant_groups=0)
    check_update(_answer(metrics={}), 3, PREVIOUS, non_constant_groups=0)
    degenerate = _answer()
    del degenerate["metrics"]
    check_update(degenerate, 3, PREVIOUS, non_constant_groups=0)
    # ... but its paths are still required.
    with pytest.raises(TrainingGateFailed, match="no state path was saved"):
        check_update(_answer(state_path="", metrics={}), 3, PREVIOUS, 0)


def test_every_problem_is_named_at_once() -> None:
    answer = _answer(
        trained_steps=9, sampler_path=PREVIOUS, metrics={"updated": False, "loss": math.nan}
    )
    with pytest.raises(TrainingGateFailed) as raised:
        check_update(answer, 3, PREVIOUS, 1)
    message = str(raised.value)
    for part in ("expected step 3 to 4", "did not return", "not finite", "the old one"):
        assert part in message


# ----- where the policy starts -------------------------------------------------------------


def _write_rows(paths: RunDir, rows: list[dict[str, Any]]) -> None:
    paths.tinker_checkpoints.parent.mkdir(parents=True, exist_ok=True)
    journal = Journal(paths.tinker_checkpoints)
    try:
        for row in rows:
            journal.append(row)
    finally:
        journal.close()


def _row(step: int) -> dict[str, Any]:
    return {
        "step": step,
        "state_path": f"tinker://run/state-{step}",
        "sampler_path": f"tinker://run/sampler-{step}",
        "sampled_by": [],
        "metrics": {},
        "seconds": {},
    }


def test_a_fresh_run_starts_from_the_base_model(tmp_path: Path) -> None:
    paths = RunDir(tmp_path)
    assert checkpoint_rows(paths) == []
    assert policy_start(paths, "Qwen/Qwen3-8B", None) == PolicyStart(
        0, None, None, "base:Qwen/Qwen3-8B"
    )
    assert policy_start(paths, "Qwen/Qwen3-8B", "") == PolicyStart(
        0, None, None, "base:Qwen/Qwen3-8B"
    )


def test_a_fresh_run_with_a_checkpoint_loads_its_weights(tmp_path: Path) -> None:
    start = policy_start(RunDir(tmp_path), "Qwen/Qwen3-8B", "tinker://warm/weights")
    assert start == PolicyStart(0, None, "tinker://warm/weights", "tinker://warm/weights")


def test_a_resumed_run_starts_from_the_last_row(tmp_path: Path) -> None:
    paths = RunDir(tmp_path)
    _write_rows(paths, [_row(0), _row(1), _row(2)])
    assert [r["step"] for r in checkpoint_rows(paths)] == [0, 1, 2]
    for load in (None, "tinker://warm/weights"):  # the chain wins over a warm start
        start = policy_start(paths, "Qwen/Qwen3-8B", load)
        assert start.trained_steps == 3
        assert start.resume_state == "tinker://run/state-2"
        assert start.load_weights is None
        assert start.sampler_name == "tinker://run/sampler-2"


def test_a_torn_last_row_is_not_trusted(tmp_path: Path) -> None:
    paths = RunDir(tmp_path)
    _write_rows(paths, [_row(0)])
    with open(paths.tinker_checkpoints, "ab") as handle:
        handle.write(b'{"step": 1, "state_path": "tinker://run/sta')
    start = policy_start(paths, "m", None)
    assert (start.trained_steps, start.resume_state) == (1, "tinker://run/state-0")


@pytest.mark.parametrize("steps", [[1], [0, 2], [0, 1, 1], [0, "1"], [0, None]])
def test_a_chain_out_of_order_is_refused(tmp_path: Path, steps: list[Any]) -> None:
    paths = RunDir(tmp_path)
    rows = [{**_row(i), "step": s} for i, s in enumerate(steps)]
    _write_rows(paths, rows)
    with pytest.raises(TrainingInvariantFailed, match="row"):
        policy_start(paths, "m", None)


def test_a_damaged_chain_is_refused(tmp_path: Path) -> None:
    paths = RunDir(tmp_path)
    _write_rows(paths, [_row(0)])
    with open(paths.tinker_checkpoints, "ab") as handle:
        handle.write(b"not json\n")
    _write_rows(paths, [_row(1)])
    with pytest.raises(TrainingInvariantFailed, match="damaged"):
        checkpoint_rows(paths)
