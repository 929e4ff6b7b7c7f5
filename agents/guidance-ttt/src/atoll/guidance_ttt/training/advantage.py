"""TTT-Discover's advantage: entropic weights with an adaptive β, leave-one-out.

The method weights each rollout of a group by exp(β·r), with β chosen per
group so that the weights, as a distribution over the group, sit at a fixed
distance from uniform: KL(softmax(β·r) ‖ uniform) = ln 2. A group of nearly
equal rewards therefore gets a large β and a group with one outlier a small
one, so the update sees the same contrast whatever the reward's scale. Each
weight is compared with the mean weight of the *other* members (leave one
out), which makes A_i = e_i / Z_{-i} − 1.

The search for β follows the reference step by step (TTT-Discover, paper
branch, tinker_cookbook/rl/train.py, `entropic_adaptive_beta`): start from
an upper bound of 1 and double it while the KL is still below the target
(stopping at 1e6, where the best effort is the bound itself), then 60
bisections on [0, hi], taking the upper end. A group of fewer than two
samples has β = 0. Computed in double precision where the reference uses
float32 tensors: where β is well conditioned the advantages agree to
float32's precision; where the search ends on a rounding (two members, or
ties at the top) β differs but the advantages keep their shape.

This module is plain Python (the standard library only, Python 3.11 and up)
so that both sides of training=tinker run the same arithmetic: the agent
computes the advantages here, and the policy server, in the managed Python
3.11 environment, imports `kl_shaped` from this file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# KL(q_β ‖ uniform) the reference solves for.
TARGET_KL = math.log(2.0)
BETA_MAX = 1e6
BISECTIONS = 60
# Added to each leave-one-out normaliser, as the reference does.
EPSILON = 1e-12


@dataclass(frozen=True)
class GroupAdvantages:
    """The advantages of one group's rollouts, in the group's order, and the β that made them."""

    beta: float
    advantages: tuple[float, ...]


def _kl_to_uniform(rewards: Sequence[float], beta: float) -> float:
    """KL(softmax(β·r) ‖ uniform), computed stably from the centred logits."""
    top = max(rewards)
    logits = [beta * (r - top) for r in rewards]
    log_norm = math.log(math.fsum(math.exp(x) for x in logits))
    log_k = math.log(len(rewards))
    total = 0.0
    for x in logits:
        log_q = x - log_norm
        total += math.exp(log_q) * (log_q + log_k)
    return total


def adaptive_beta(rewards: Sequence[float]) -> float:
    """The β at which the group's entropic weights are ln 2 away from uniform."""
    if len(rewards) < 2:
        return 0.0
    lo, hi = 0.0, 1.0
    if _kl_to_uniform(rewards, hi) < TARGET_KL:
        while hi < BETA_MAX and _kl_to_uniform(rewards, hi) < TARGET_KL:
            hi *= 2.0
        if _kl_to_uniform(rewards, hi) < TARGET_KL:
            return hi  # the reference's best effort: the KL never reaches the target
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        if _kl_to_uniform(rewards, mid) < TARGET_KL:
            lo = mid
        else:
            hi = mid
    return hi


def entropic_advantages(rewards: Sequence[float]) -> GroupAdvantages:
    """A_i = e_i / (Z_{-i} + 1e-12) − 1 with e_i = exp(β·(r_i − max r)) and the adaptive β.

    Equal rewards give A ≈ 0 (−1e-12) for every member; the update leaves
    such a group out. With two members whose rewards differ, the KL to
    uniform only approaches ln 2 (it reaches it in floating point once one
    weight underflows), so the worse member gets A = −1 and the better one
    about 1e12: the reference's own behaviour, which Adam's per-parameter
    scaling absorbs.
    """
    values = [float(r) for r in rewards]
    if not values:
        return GroupAdvantages(0.0, ())
    if any(not math.isfinite(r) for r in values):
        raise ValueError(f"rewards must be finite numbers, got {values}")
    beta = adaptive_beta(values)
    top = max(values)
    weights = [math.exp(beta * (r - top)) for r in values]
    k = len(weights)
    if k == 1:
        return GroupAdvantages(beta, (weights[0] / (weights[0] + EPSILON) - 1.0,))
    total = math.fsum(weights)
    advantages = tuple(w / ((total - w) / (k - 1) + EPSILON) - 1.0 for w in weights)
    return GroupAdvantages(beta, advantages)


def kl_shaped(
    advantages: Sequence[Sequence[float]],
    sampled_logprobs: Sequence[Sequence[float]],
    base_logprobs: Sequence[Sequence[float]],
    coefficient: float,
) -> tuple[list[list[float]], float]:
    """Per-token advantages with the KL-to-base term, and the batch's mean log-ratio.

    With d_t = logp_sampled − logp_base on every completion token and d̄ its
    mean over all completion tokens of the batch, A_t += λ·(d̄ − d_t), as
    the reference's KL penalty does. Returns the shaped advantages and d̄
    (an estimate of KL(policy ‖ base) per token).
    """
    diffs = [
        [s - b for s, b in zip(sampled, base, strict=True)]
        for sampled, base in zip(sampled_logprobs, base_logprobs, strict=True)
    ]
    count = sum(len(d) for d in diffs)
    mean = math.fsum(x for d in diffs for x in d) / count if count else 0.0
    shaped = [
        [a + coefficient * (mean - x) for a, x in zip(row, d, strict=True)]
        for row, d in zip(advantages, diffs, strict=True)
    ]
    return shaped, mean
