"""The worker hooks Slime calls: the method's loss, and its KL-to-base advantage term.

Slime imports this module in each Megatron worker (Reef resolves the hooks
from the loss family, `atoll.guidance_ttt.tttd.slime`), where torch,
Megatron and Slime are installed. Only the decorators run at import time, so
the module also imports where those are absent; the formulas themselves are
`slime.tensors`, checked on CPU.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from numbers import Integral
from typing import Any

from reef.train.slime_backend.algorithm import objective


@objective("custom_loss_function_path")
def tttd_loss(
    args: Namespace,
    batch: dict[str, Any],
    logits: Any,
    sum_of_sample_mean: Callable[[Any], Any],
) -> tuple[Any, dict[str, Any]]:
    """The reference's loss: Σ_t −exp(logp − logq)·A_t over every response token of the batch.

    Slime divides a custom loss by the step's global batch size before
    accumulating it over microbatches and data-parallel ranks; multiplying by
    that size here undoes the division, so the gradient is the full batch's
    token sum, as Tinker's `importance_sampling` loss gives it. The loss mask
    is not applied: the reference gates only the KL term with it.
    """
    import torch
    from slime.backends.megatron_utils.loss import (
        get_log_probs_and_entropy,
        get_rollout_top_p_logprob_kwargs,
    )

    from atoll.guidance_ttt.tttd.slime.tensors import importance_sampling_loss

    if not getattr(args, "use_rollout_logprobs", False):
        raise ValueError("the TTT-Discover loss needs --use-rollout-logprobs")
    sampled = batch.get("rollout_log_probs")
    advantages = batch.get("advantages")
    if not sampled or not advantages:
        raise ValueError(
            "the TTT-Discover loss needs rollout_log_probs and advantages in the batch"
        )
    size = batch.get("step_global_batch_size")
    if not isinstance(size, Integral) or isinstance(size, bool) or size <= 0:
        raise ValueError(
            f"the TTT-Discover loss needs a positive step_global_batch_size, got {size!r}"
        )
    _, outputs = get_log_probs_and_entropy(
        logits,
        args=args,
        unconcat_tokens=batch["unconcat_tokens"],
        total_lengths=batch["total_lengths"],
        response_lengths=batch["response_lengths"],
        with_entropy=False,
        **get_rollout_top_p_logprob_kwargs(args, batch),
    )
    log_probs = torch.cat(outputs["log_probs"], dim=0)
    rollout_log_probs = torch.cat(sampled, dim=0)
    loss = importance_sampling_loss(log_probs, rollout_log_probs, torch.cat(advantages, dim=0))
    total = loss.sum() * int(size)
    if log_probs.numel() == 0:
        total = total + 0 * logits.sum()  # keeps the graph connected on an empty microbatch
    drift = log_probs.detach().float() - rollout_log_probs.float()
    return total, {
        "loss": total.detach().clone(),
        "pg_loss": total.detach().clone(),
        "importance_ratio": sum_of_sample_mean(torch.exp(drift)).detach().clone(),
        "ppo_kl": sum_of_sample_mean(-drift).detach().clone(),
    }


@objective("custom_advantage_function_path")
def tttd_advantages(args: Namespace, rollout_data: dict[str, Any]) -> None:
    """A_t += λ·(d̄ − d_t), d_t = logp_sampled − logp_base on the masked tokens, d̄ over the whole batch.

    Reef supplied one advantage per trajectory, spread over its response
    tokens; Slime has just computed the frozen base model's log-probabilities
    (`ref_log_probs`). The mean is taken across every data-parallel rank, so
    every rank shapes with the same d̄, as a single process would.
    """
    import torch.distributed as dist
    from megatron.core import mpu

    from atoll.guidance_ttt.tttd.slime.tensors import kl_shaped_advantages, log_ratio_sums

    if mpu.get_context_parallel_world_size() != 1:
        raise ValueError("the TTT-Discover KL term needs context_parallel_size 1")
    if not mpu.is_pipeline_last_stage():
        return
    fields = ("advantages", "rollout_log_probs", "ref_log_probs", "loss_masks")
    missing = [name for name in fields if not rollout_data.get(name)]
    if missing:
        raise ValueError(f"the TTT-Discover KL term needs {', '.join(missing)} in the rollout data")
    if len({len(rollout_data[name]) for name in fields}) != 1:
        raise ValueError(
            "advantages, rollout_log_probs, ref_log_probs and loss_masks hold different samples"
        )
    differences, total, count = log_ratio_sums(
        rollout_data["rollout_log_probs"], rollout_data["ref_log_probs"], rollout_data["loss_masks"]
    )
    group = mpu.get_data_parallel_group()
    if dist.get_world_size(group=group) > 1:
        dist.all_reduce(total, group=group)
        dist.all_reduce(count, group=group)
    if count.item() <= 0:
        raise ValueError("the TTT-Discover KL term got an empty loss mask")
    mean = total / count
    shaped = kl_shaped_advantages(
        rollout_data["advantages"],
        differences,
        rollout_data["loss_masks"],
        mean,
        float(args.kl_coef),
    )
    rollout_data["advantages"] = shaped
    rollout_data["returns"] = [value.clone() for value in shaped]
