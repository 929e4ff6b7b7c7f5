"""The Slime loss family of TTT-Discover: what the training driver checks before launch.

No torch here: Reef's driver resolves the family and validates the backend
arguments against it in a process that never trains, and atoll's own checks
run it on CPU. The tensors are in `slime.objective`, imported by the
Megatron workers only.

The family replaces Slime's whole loss (`custom_loss`) with the reference's
sum-reduced importance-sampling objective, and keeps Slime's advantage pass
only to run its own hook there: Slime computes the frozen base model's
log-probabilities just before that hook, which adds the KL-to-base term to
the advantages Reef supplied.
"""

from __future__ import annotations

import math
from argparse import Namespace
from numbers import Real

from reef.train.slime_backend.algorithm import SlimeAlgorithm, register_loss_family

from atoll.guidance_ttt.tttd import names


@register_loss_family
class TttdAlgorithm(SlimeAlgorithm):
    """Custom loss and advantage hooks; Reef's per-trajectory advantages are required."""

    loss_family = names.LOSS_FAMILY
    loss_type = "custom_loss"
    requires_rollout_logprobs = True
    advantages = "required"
    allows_slime_advantage_computation = True
    required_objective_hooks = ("custom_loss_function_path", "custom_advantage_function_path")

    def validate_specific_args(self, args: Namespace, source: str) -> None:
        """Refuse, before any GPU is touched, a launch that would train another objective."""
        hooks = {
            "custom_loss_function_path": names.LOSS_HOOK,
            "custom_advantage_function_path": names.ADVANTAGE_HOOK,
        }
        for attribute, expected in hooks.items():
            given = getattr(args, attribute, None)
            if given != expected:
                flag = "--" + attribute.replace("_", "-")
                raise RuntimeError(f"{source} requires {flag} {expected}, got {given!r}")
        if not getattr(args, "compute_advantages_and_returns", True):
            raise RuntimeError(
                f"{source} needs Slime's advantage pass: the KL-to-base term is added there"
            )
        coefficient = getattr(args, "kl_coef", None)
        # Slime loads the frozen base model only when the coefficient is non-zero,
        # and the hook reads the base log-probabilities it computes.
        if (
            not isinstance(coefficient, Real)
            or isinstance(coefficient, bool)
            or not math.isfinite(float(coefficient))
            or coefficient <= 0
        ):
            raise RuntimeError(f"{source} requires a finite --kl-coef > 0, got {coefficient!r}")
        if getattr(args, "context_parallel_size", 1) != 1:
            raise RuntimeError(
                f"{source} requires --context-parallel-size 1: the KL term's mean is taken "
                "over whole completions"
            )
