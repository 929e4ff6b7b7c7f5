"""The method's two tensor formulas, in torch and nothing else.

Kept apart from the worker hooks (which need Megatron and Slime) so that
they can be checked on CPU against the standard-library arithmetic of
`atoll.guidance_ttt.training.advantage`, which the Tinker path trains with.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def importance_sampling_loss(
    log_probs: torch.Tensor, rollout_log_probs: torch.Tensor, advantages: torch.Tensor
) -> torch.Tensor:
    """Tinker's `importance_sampling` loss per token: −exp(logp − logq)·A, unclipped.

    Its gradient with respect to logp at logp = logq is −A, the plain policy
    gradient; the ratio corrects for the sampler's numerics drifting from the
    trainer's. Slime's stock policy loss clips and averages instead.
    """
    if not log_probs.shape == rollout_log_probs.shape == advantages.shape:
        raise ValueError(
            "log_probs, rollout_log_probs and advantages must have one shape, got "
            f"{tuple(log_probs.shape)}, {tuple(rollout_log_probs.shape)}, {tuple(advantages.shape)}"
        )
    ratio = torch.exp(log_probs.float() - rollout_log_probs.float())
    return -ratio * advantages.float()


def log_ratio_sums(
    rollout_log_probs: Sequence[torch.Tensor],
    base_log_probs: Sequence[torch.Tensor],
    loss_masks: Sequence[torch.Tensor],
) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """Each sample's masked d_t = logp_sampled − logp_base, and the batch's sum of d and of the mask.

    The sums are returned apart so that a data-parallel caller can add them
    across ranks before dividing.
    """
    if not len(rollout_log_probs) == len(base_log_probs) == len(loss_masks):
        raise ValueError("rollout, base and mask lists must hold the same samples")
    differences: list[torch.Tensor] = []
    total = torch.zeros((), dtype=torch.float32)
    count = torch.zeros((), dtype=torch.float32)
    for index, (sampled, base, mask) in enumerate(
        zip(rollout_log_probs, base_log_probs, loss_masks, strict=True)
    ):
        if not sampled.shape == base.shape == mask.shape:
            raise ValueError(
                f"sample {index}: rollout {tuple(sampled.shape)}, base {tuple(base.shape)} and "
                f"mask {tuple(mask.shape)} differ in shape"
            )
        weight = mask.to(device=sampled.device, dtype=torch.float32)
        difference = (sampled.float() - base.float()) * weight
        differences.append(difference)
        total = total.to(difference.device) + difference.sum()
        count = count.to(difference.device) + weight.sum()
    return differences, total, count


def kl_shaped_advantages(
    advantages: Sequence[torch.Tensor],
    differences: Sequence[torch.Tensor],
    loss_masks: Sequence[torch.Tensor],
    mean_difference: torch.Tensor,
    coefficient: float,
) -> list[torch.Tensor]:
    """A_t + λ·(d̄ − d_t) on the masked tokens; unmasked tokens keep their advantage."""
    shaped = []
    for advantage, difference, mask in zip(advantages, differences, loss_masks, strict=True):
        weight = mask.to(device=advantage.device, dtype=torch.float32)
        shaped.append(advantage.float() + coefficient * weight * (mean_difference - difference))
    return shaped
