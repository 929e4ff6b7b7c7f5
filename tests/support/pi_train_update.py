"""One update of a training command's own trainer, measured: run by the managed Python 3.11.

Reads {"job": ..., "managed": DIR} on stdin: the
job a training command hands managed/train.py (built by the command's own
functions, its scoring service running) and the directory of that script.
Everything between the rollouts and the new sampler is the trainer's:
train.py's `config(job)` (the cookbook's loss, optimizer, temperature and
rollout strategy), its dataset's first batch (the command's Envs and
renderer), the cookbook's group rollout, `compute_advantages`,
`assemble_training_data` and the one training step its loop takes
(`do_train_step_and_get_sampling_client`).

The one thing set here is the reward: the rollouts are scored by the
command's service, then given known rewards, so the advantages are known.
Two steps on one LoRA: first every trajectory gets the same reward (the
advantages are all 0: the policy must not move), then distinct rewards
within each group (0, 1, ... in rollout order). Each trajectory's summed
completion logprob (its action tokens, every turn) is computed under the
sampler before, after the first step and after the second.

Prints one JSON line: per trajectory its group, advantages of both steps,
the sampled logprob sum, the three computed sums, its turns and datums.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from typing import Any

import tinker
from tinker_cookbook import checkpoint_utils
from tinker_cookbook.rl import train as rl_train
from tinker_cookbook.rl.data_processing import (
    assemble_training_data,
    compute_advantages,
    trajectory_to_data,
)
from tinker_cookbook.rl.rollouts import do_group_rollout_and_filter_constant_reward
from tinker_cookbook.rl.types import Trajectory, TrajectoryGroup
from tinker_cookbook.tokenizer_utils import get_tokenizer


def with_rewards(group: TrajectoryGroup, rewards: list[float]) -> TrajectoryGroup:
    """The group with each trajectory's total reward set to `rewards[i]` (its tokens unchanged)."""
    turns = [sum(t.reward for t in traj.transitions) for traj in group.trajectories_G]
    finals = [r - s for r, s in zip(rewards, turns, strict=True)]
    return dataclasses.replace(group, final_rewards_G=finals)


async def completion_logprob(sampler: tinker.SamplingClient, traj: Trajectory) -> float:
    """The sum of the trajectory's action-token logprobs under `sampler`, over its datums."""
    total = 0.0
    for datum in trajectory_to_data(traj, 0.0):
        targets = datum.loss_fn_inputs["target_tokens"].to_torch().tolist()
        mask = datum.loss_fn_inputs["mask"].to_torch().tolist()
        tokens = [*datum.model_input.to_ints(), int(targets[-1])]
        values = await sampler.compute_logprobs_async(tinker.ModelInput.from_ints(tokens))
        # Hosted Tinker gives one value per token (None for the first), SkyRL tx one per
        # predicted token: either way the last len(targets) are the targets'.
        tail = list(values)[-len(targets) :]
        assert len(tail) == len(targets), (len(values), len(tokens))
        total += sum(float(v) for v, m in zip(tail, mask, strict=True) if m > 0)
    return total


async def sums(sampler: tinker.SamplingClient, groups: list[TrajectoryGroup]) -> list[float]:
    return [await completion_logprob(sampler, t) for g in groups for t in g.trajectories_G]


async def measure(job: dict[str, Any], config: Any) -> dict[str, Any]:
    service = tinker.ServiceClient(base_url=config.base_url)
    training = await service.create_lora_training_client_async(
        config.model_name, rank=config.lora_rank
    )
    tokenizer = get_tokenizer(config.model_name)
    dataset, _ = await config.dataset_builder()
    builders = list(dataset.get_batch(0))
    checkpoints = checkpoint_utils.CheckpointManager(
        training_client=training,
        service_client=service,
        log_path=config.log_path,
        save_every=config.save_every,
        ttl_seconds=config.ttl_seconds,
    )
    sampler, _ = await rl_train.save_checkpoint_and_get_sampling_client(training, checkpoints, 0, 0)
    groups = []
    for builder in builders:
        group = await do_group_rollout_and_filter_constant_reward(
            sampler,
            builder,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            do_remove_constant_reward_groups=False,
            enable_logging=False,
            strategy=config.effective_rollout_strategy(),
            termination=config.effective_termination(),
        )
        assert group is not None, "a group failed to roll out"
        groups.append(group)
    scored = [g.get_total_rewards() for g in groups]
    before = await sums(sampler, groups)

    async def step(i_batch: int, rewarded: list[TrajectoryGroup]) -> tinker.SamplingClient:
        if config.remove_constant_reward_groups:
            rewarded = rl_train.remove_constant_reward_groups(rewarded)
        new_sampler, _metrics = await rl_train.do_train_step_and_get_sampling_client(
            config, i_batch, training, checkpoints, None, tokenizer, builders, rewarded
        )
        return new_sampler

    equal = [with_rewards(g, [1.0] * len(g.trajectories_G)) for g in groups]
    after_equal = await sums(await step(0, equal), groups)
    ranked = [with_rewards(g, [float(i) for i in range(len(g.trajectories_G))]) for g in groups]
    after_ranked = await sums(await step(1, ranked), groups)

    rows = []
    equal_adv = [float(a) for advs in compute_advantages(equal) for a in advs]
    ranked_adv = [float(a) for advs in compute_advantages(ranked) for a in advs]
    data, meta = assemble_training_data(ranked, compute_advantages(ranked))
    k = 0
    for g, group in enumerate(groups):
        for i, traj in enumerate(group.trajectories_G):
            rows.append(
                {
                    "group": g,
                    "scored_reward": scored[g][i],
                    "equal_advantage": equal_adv[k],
                    "advantage": ranked_adv[k],
                    "sampled": sum(sum(t.ac.logprobs) for t in traj.transitions),
                    "before": before[k],
                    "after_equal": after_equal[k],
                    "after": after_ranked[k],
                    "turns": len(traj.transitions),
                    "tokens": sum(len(t.ac.tokens) for t in traj.transitions),
                    "datums": sum(1 for m in meta if m == {"group_idx": g, "traj_idx": i}),
                }
            )
            k += 1
    return {
        "mode": job["mode"],
        "loss_fn": config.loss_fn,
        "learning_rate": config.learning_rate,
        "datums": len(data),
        "trajectories": rows,
    }


def main() -> None:
    request = json.loads(sys.stdin.read())
    sys.path.insert(0, request["managed"])  # train.py, and shell_episode.py beside it
    import train as trainer  # the managed trainer script every training command runs

    job = request["job"]
    print(json.dumps(asyncio.run(measure(job, trainer.config(job)))))


if __name__ == "__main__":
    main()
    # The answer is printed and every Tinker future resolved. Leave without finalizing the
    # interpreter, as tinker_warm_start.py does: the Tinker client's event loop runs on in a
    # daemon thread, where a CI run saw that script abort (SIGABRT) after its work was done.
    sys.stdout.flush()
    os._exit(0)
