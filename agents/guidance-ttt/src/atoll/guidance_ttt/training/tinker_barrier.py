"""The training barrier of training=tinker: train the step through Tinker, then check it.

The archive of step s is committed only once the policy's weights include
step s's update, saved durably: the step's batch (its exact samples, rewards
and advantages) is written first, the policy server trains on it and saves
the training state and the sampler weights, and only then is the step's row
appended to the checkpoint chain (`tinker-checkpoints.jsonl`). That row is
what a resume trusts. The gate fails closed: a loss that is not finite, an
update whose optimizer step did not return, a save without paths, or a new
sampler that is the old one.

Crash consistency: a run killed before the row was written finds its policy
server restarted from the previous row's state (with its optimizer), so the
step is trained again from the same batch and no optimizer step is applied
twice; a run killed after the row finds the step trained, and commits it
without training again.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from atoll.core.durable import atomic_write_json
from atoll.guidance_ttt.services.training_barrier import (
    TINKER_MODE,
    StepExpectation,
    TrainingCommit,
    TrainingGateFailed,
    TrainingInvariantFailed,
)
from atoll.guidance_ttt.state.jsonl_journal import Journal, JournalCorrupt, read_journal
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import read_step
from atoll.guidance_ttt.training import failpoints
from atoll.guidance_ttt.training.batch import batch_from_journal
from atoll.guidance_ttt.training.tinker_policy import PolicyStart, TinkerPolicy

__all__ = ["TINKER_MODE", "TinkerTrainingBarrier", "TinkerUpdate", "check_update", "policy_start"]


@dataclass(frozen=True)
class TinkerUpdate:
    """How each step is trained: the optimizer's rate, the KL coefficient, the loss's reduction."""

    learning_rate: float
    kl_coef: float
    # SkyRL tx divides each sequence's loss by its length and the batch's by its size;
    # hosted Tinker sums. True: the server scales advantages so that the loss is the sum.
    per_sequence_mean: bool


def checkpoint_rows(paths: RunDir) -> list[dict[str, Any]]:
    """The checkpoint chain: one row per trained step, steps 0, 1, ... in order."""
    try:
        rows = read_journal(paths.tinker_checkpoints).records
    except JournalCorrupt as exc:
        raise TrainingInvariantFailed(str(exc)) from None
    for index, row in enumerate(rows):
        if row.get("step") != index:
            raise TrainingInvariantFailed(
                f"{paths.tinker_checkpoints}: row {index} is step {row.get('step')!r}, not {index}"
            )
    return rows


def policy_start(paths: RunDir, base_model: str, load_checkpoint: str | None) -> PolicyStart:
    """The weights a (re)started policy server loads: the last trained step's, else the start's."""
    rows = checkpoint_rows(paths)
    if rows:
        last = rows[-1]
        return PolicyStart(len(rows), str(last["state_path"]), None, str(last["sampler_path"]))
    if load_checkpoint:
        return PolicyStart(0, None, load_checkpoint, load_checkpoint)
    return PolicyStart(0, None, None, f"base:{base_model}")


def check_update(
    answer: Mapping[str, Any], step: int, previous_sampler: str, non_constant_groups: int
) -> None:
    """Fail closed unless the policy server's answer shows a saved update of `step`."""
    problems: list[str] = []
    metrics = answer.get("metrics") if isinstance(answer.get("metrics"), Mapping) else {}
    assert isinstance(metrics, Mapping)
    if answer.get("step") != step or answer.get("trained_steps") != step + 1:
        problems.append(
            f"the server trained step {answer.get('step')!r} to {answer.get('trained_steps')!r} "
            f"steps, expected step {step} to {step + 1}"
        )
    if non_constant_groups > 0:
        if metrics.get("updated") is not True:
            problems.append("the optimizer step did not return")
        loss = metrics.get("loss")
        if not isinstance(loss, int | float) or isinstance(loss, bool) or not math.isfinite(loss):
            problems.append(f"the loss {loss!r} is not finite")
    for key in ("state_path", "sampler_path"):
        if not isinstance(answer.get(key), str) or not answer[key]:
            problems.append(f"no {key.replace('_', ' ')} was saved")
    if answer.get("sampler_path") == previous_sampler:
        problems.append(f"the new sampler is the old one ({previous_sampler})")
    if problems:
        raise TrainingGateFailed(f"training of step {step} fails the gate: " + "; ".join(problems))


class TinkerTrainingBarrier:
    """Trains each step through the run's Tinker policy server before its archive is committed."""

    mode = TINKER_MODE

    def __init__(
        self, policy: TinkerPolicy, paths: RunDir, update: TinkerUpdate, start: PolicyStart
    ) -> None:
        self.policy = policy
        self.paths = paths
        self.update = update
        self.first_sampler = start.sampler_name  # what sampled before the chain's first row

    def trainer_step(self) -> int | None:
        """The steps in the durable checkpoint chain."""
        return len(checkpoint_rows(self.paths))

    def start(self, step: int) -> None:
        served = int(self.policy.status()["trained_steps"])
        if served != self.trainer_step():
            raise TrainingInvariantFailed(
                f"the Tinker policy holds {served} trained steps, the run's checkpoint chain "
                f"{self.trainer_step()}; restart the run so that the policy loads the chain's last state"
            )

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        rows = checkpoint_rows(self.paths)
        if len(rows) > expected.step:  # trained and saved before the run stopped
            return _commit(expected.step, rows[expected.step])
        if len(rows) != expected.step:
            raise TrainingInvariantFailed(
                f"the checkpoint chain holds {len(rows)} steps; step {expected.step} cannot be trained next"
            )
        state = read_step(self.paths.step_journal(expected.step), expected.step)
        batch = batch_from_journal(state, expected.groups, expected.rollouts_per_group)
        atomic_write_json(self.paths.step_training(expected.step), batch.to_json())
        previous = str(rows[-1]["sampler_path"]) if rows else self.first_sampler
        answer = self.policy.train(
            {
                "step": expected.step,
                "name": f"step-{expected.step:05d}-{uuid.uuid4().hex[:8]}",
                "datums": batch.datums(),
                "learning_rate": self.update.learning_rate,
                "kl_coef": self.update.kl_coef,
                "per_sequence_mean": self.update.per_sequence_mean,
            }
        )
        check_update(answer, expected.step, previous, batch.non_constant_groups)
        row = {
            "step": expected.step,
            "state_path": answer["state_path"],
            "sampler_path": answer["sampler_path"],
            "sampled_by": sorted(batch.samplers()),
            "metrics": {**batch.metrics(), **dict(answer.get("metrics") or {})},
            "seconds": dict(answer.get("seconds") or {}),
        }
        try:
            valid = read_journal(self.paths.tinker_checkpoints).valid_length
        except JournalCorrupt as exc:
            raise TrainingInvariantFailed(str(exc)) from None
        journal = Journal(self.paths.tinker_checkpoints, valid_length=valid)
        try:
            journal.append(row)
        finally:
            journal.close()
        failpoints.reached(failpoints.AFTER_CHECKPOINT_ROW, expected.step)
        return _commit(expected.step, row)


def _commit(step: int, row: Mapping[str, Any]) -> TrainingCommit:
    metrics = dict(row.get("metrics") or {})
    metrics.update(
        {
            "state_path": row.get("state_path"),
            "sampler_path": row.get("sampler_path"),
            "sampled_by": row.get("sampled_by"),
            "seconds": row.get("seconds"),
        }
    )
    return TrainingCommit(
        health_ok=True,
        phase="serving",
        completed_steps=step + 1,
        rollout_id=step,
        grad_norm=None,
        global_batch_size=None,
        trainable_lora_params=None,
        trainable_base_params=None,
        lora_b_nonzero=None,
        lora_b_l1=None,
        checkpoint_marker=None,
        metrics=metrics,
    )
