"""A step's training batch: the sampled guidance of each group, its rewards and advantages.

The action the method trains is the guidance alone: a datum is the guidance
prompt (advantage 0) followed by the guidance completion, every token of
which carries the rollout's advantage and its sampled logprob. The tokens
are exactly those the policy sampled, as its answer through Reef reported
them (and Reef recorded). A group is the R guidance samples of one parent;
malformed guidance is a member with reward 0; a slot whose guidance call
failed has no sample and so no datum. A group whose rewards are all equal
has zero advantages and is left out of the update, as in the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from atoll.guidance_ttt.services.reef_guidance import SampledTokens
from atoll.guidance_ttt.state.step_journal import StepState
from atoll.guidance_ttt.training.advantage import entropic_advantages


class BatchUnavailable(RuntimeError):
    """The step's journal cannot give the update its exact samples; the step is not trained."""


@dataclass(frozen=True)
class Member:
    """One rollout of a group as the update sees it."""

    rollout: int
    reward: float
    advantage: float
    status: str
    tokens: SampledTokens

    def to_json(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout,
            "reward": self.reward,
            "advantage": self.advantage,
            "status": self.status,
            **self.tokens.to_json(),
        }


@dataclass(frozen=True)
class Group:
    group: int
    beta: float
    members: tuple[Member, ...]

    @property
    def constant(self) -> bool:
        return len({m.reward for m in self.members}) <= 1

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "beta": self.beta,
            "constant": self.constant,
            "members": [m.to_json() for m in self.members],
        }


@dataclass(frozen=True)
class TrainingBatch:
    step: int
    groups: tuple[Group, ...]
    failed_slots: list[list[int]] = field(default_factory=list)

    @property
    def trained(self) -> list[Member]:
        """The members whose datums enter the update: those of non-constant groups."""
        return [m for g in self.groups if not g.constant for m in g.members]

    @property
    def non_constant_groups(self) -> int:
        return sum(1 for g in self.groups if not g.constant)

    def datums(self) -> list[dict[str, Any]]:
        return [
            {
                "prompt_tokens": list(m.tokens.prompt),
                "completion_tokens": list(m.tokens.completion),
                "logprobs": list(m.tokens.logprobs),
                "advantage": m.advantage,
            }
            for m in self.trained
        ]

    def samplers(self) -> set[str]:
        return {m.tokens.sampler for g in self.groups for m in g.members}

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "groups": [g.to_json() for g in self.groups],
            "failed_slots": self.failed_slots,
        }

    def metrics(self) -> dict[str, Any]:
        rewards = [m.reward for g in self.groups for m in g.members]
        advantages = [m.advantage for m in self.trained]
        return {
            "reward_mean": sum(rewards) / len(rewards) if rewards else None,
            "reward_max": max(rewards) if rewards else None,
            "advantage_min": min(advantages) if advantages else None,
            "advantage_mean": sum(advantages) / len(advantages) if advantages else None,
            "advantage_max": max(advantages) if advantages else None,
            "betas": [g.beta for g in self.groups],
            "non_constant_groups": self.non_constant_groups,
            "trained_samples": len(advantages),
        }


def batch_from_journal(state: StepState, groups: int, rollouts: int) -> TrainingBatch:
    """The step's batch from its rollout journal, in grid order."""
    built: list[Group] = []
    failed: list[list[int]] = []
    for group in range(groups):
        members: list[tuple[int, float, str, SampledTokens]] = []
        for rollout in range(rollouts):
            done = state.finished.get((group, rollout))
            if done is None:
                raise BatchUnavailable(
                    f"step {state.step}: slot (group {group}, rollout {rollout}) has no result"
                )
            sample = state.samples.get((group, rollout))
            if sample is None:  # the guidance call failed: nothing was sampled to train on
                failed.append([group, rollout])
                continue
            if sample.tokens is None:
                raise BatchUnavailable(
                    f"step {state.step}: the guidance answer of group {group}, rollout {rollout} "
                    "carries no sampled tokens, so it cannot be trained on exactly; with "
                    "training=tinker Reef must proxy guidance to the run's Tinker policy server"
                )
            verification = done.rollout.verification
            members.append((rollout, verification.reward, verification.status.value, sample.tokens))
        solved = entropic_advantages([reward for _, reward, _, _ in members])
        built.append(
            Group(
                group=group,
                beta=solved.beta,
                members=tuple(
                    Member(rollout, reward, advantage, status, tokens)
                    for (rollout, reward, status, tokens), advantage in zip(
                        members, solved.advantages, strict=True
                    )
                ),
            )
        )
    return TrainingBatch(state.step, tuple(built), failed)
