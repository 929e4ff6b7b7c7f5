"""The method's step preparation: one advantage per trajectory, group by group.

Reef hands the objective the whole reserved batch, laid out as its
comparison groups (the recipe's processor has already dropped constant
groups, keeping one when every group is constant, as the reference does).
Each group's advantages are TTT-Discover's entropic adaptive-β leave-one-out
values, computed by `atoll.guidance_ttt.training.advantage`, the same code
the Tinker path trains with. The KL-to-base term needs the model's
log-probabilities, so it is added on the workers (`slime.objective`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reef.core.batches import TrainingBatch, trajectory_groups
from reef.core.trajectories import trajectory_reward
from reef.train.algos import TrainingObjective
from reef.train.algos.helpers import next_steps
from reef.train.algos.registry import register_loss_family_ref, register_objective
from reef.train.algos.signals import StepSignal

from atoll.guidance_ttt.training.advantage import entropic_advantages
from atoll.guidance_ttt.tttd.names import LOSS_FAMILY, SLIME_SPEC

# Reef's driver resolves the family by name, and stamps this reference for the workers.
register_loss_family_ref(LOSS_FAMILY, SLIME_SPEC)


@register_objective
class TttdObjective(TrainingObjective):
    """Entropic adaptive-β leave-one-out advantages over each comparison group."""

    name = LOSS_FAMILY
    loss_family = LOSS_FAMILY
    # The loss is an unclipped importance-sampling sum: one pass per batch only.
    supports_multiple_epochs = False

    def prepare(self, batch: TrainingBatch, state: Mapping[str, Any]) -> StepSignal:
        advantages: list[float] = []
        betas: list[float] = []
        constant = 0
        groups = trajectory_groups(batch)
        for group in groups:
            rewards = [trajectory_reward(sample) for sample in group]
            computed = entropic_advantages(rewards)
            advantages.extend(computed.advantages)
            betas.append(computed.beta)
            constant += len(set(rewards)) == 1
        steps = next_steps(state)
        values = tuple(advantages)
        # A batch of constant groups only is the processor's one kept group:
        # the reference trains it (its advantages are all ~0), and so does this.
        metrics = {
            "advantages": values,
            "adaptive_betas": tuple(betas),
            "constant_groups_retained": int(bool(groups) and constant == len(groups)),
            "steps": steps,
        }
        return StepSignal("train", {"steps": steps}, metrics, values)
