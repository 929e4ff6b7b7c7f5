"""Every path under a run's state directory, spelled in one place.

A run keeps all it needs to resume under its state directory: its own files
in `guidance-run/` (the archive, its journal and committed copy, the resume
state, each step's rollout journal and summary, the final result), Reef's
records and the trainer's checkpoints in `reef/`, and the stack `atoll stack
up` starts for it in `stack/` (with Reef's own run directory in it). Modules
ask a `RunDir` for the path they read or write instead of joining file names
onto the state directory themselves, so the layout the README lists is the
layout this module spells. The `reef/` and `stack/` locations are
`atoll.core.reef_runtime`'s, which the Reef stack uses too; `RunDir` names
them, and the trainer's files in them, through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from atoll.core import reef_runtime

# The run's own files, inside the state directory.
RUN_SUBDIR = "guidance-run"
WORKING_FILE = "library.json"
COMMITTED_FILE = "committed-library.json"
JOURNAL_FILE = "library.journal.jsonl"
LOCK_FILE = "library.lock"
RESUME_FILE = "resume-state.json"
RESULT_FILE = "result.json"
STEPS_DIR = "steps"
STEP_JOURNAL_SUFFIX = ".jsonl"
SUMMARY_SUFFIX = ".summary.json"
# training=tinker: each step's training batch, the durable checkpoint chain, the policy's log.
TRAINING_SUFFIX = ".training.json"
TINKER_CHECKPOINTS_FILE = "tinker-checkpoints.jsonl"
TINKER_POLICY_LOG = "tinker-policy.log"
# Reef's trainer records its latest training job (status, rollout id, metrics) in this
# file beside its published adapters, and only settles it once the job's commit is durable.
JOB_MARKER_FILE = ".reef-latest-job.json"
# Megatron writes this file into its save directory once a checkpoint is durable.
CHECKPOINT_MARKER_FILE = "latest_checkpointed_iteration.txt"


def run_dir(state_dir: Path) -> Path:
    """The run's own files: `<state_dir>/guidance-run`."""
    return state_dir / RUN_SUBDIR


def step_journal_path(run_directory: Path, step: int) -> Path:
    """The rollout journal of `step` in the run's own files (`run_dir(state_dir)`)."""
    return run_directory / STEPS_DIR / f"step-{step:05d}{STEP_JOURNAL_SUFFIX}"


def step_summary_path(run_directory: Path, step: int) -> Path:
    """The summary of committed step `step` in the run's own files (`run_dir(state_dir)`)."""
    return run_directory / STEPS_DIR / f"step-{step:05d}{SUMMARY_SUFFIX}"


@dataclass(frozen=True)
class RunDir:
    """The layout of one run's state directory."""

    state_dir: Path

    @property
    def directory(self) -> Path:
        """The run's own files (`guidance-run/`), guarded by `archive_lock`."""
        return run_dir(self.state_dir)

    @property
    def working_archive(self) -> Path:
        """The archive as of the last step barrier (`library.json`)."""
        return self.directory / WORKING_FILE

    @property
    def committed_archive(self) -> Path:
        """The archive as of the last checked training commit, the only one a resume restores."""
        return self.directory / COMMITTED_FILE

    @property
    def archive_journal(self) -> Path:
        """The archive's events since `working_archive` was written."""
        return self.directory / JOURNAL_FILE

    @property
    def archive_lock(self) -> Path:
        """The lock one process at a time holds while it has the run's archive open."""
        return self.directory / LOCK_FILE

    @property
    def resume_state(self) -> Path:
        return self.directory / RESUME_FILE

    @property
    def result(self) -> Path:
        """The run's result: its best program and step summaries, written when it returns."""
        return self.directory / RESULT_FILE

    @property
    def steps(self) -> Path:
        """Each step's rollout journal and, once committed, its summary."""
        return self.directory / STEPS_DIR

    def step_journal(self, step: int) -> Path:
        return step_journal_path(self.directory, step)

    def step_summary(self, step: int) -> Path:
        return step_summary_path(self.directory, step)

    def step_training(self, step: int) -> Path:
        """training=tinker: the step's batch (tokens, logprobs, rewards, advantages, sampler)."""
        return self.directory / STEPS_DIR / f"step-{step:05d}{TRAINING_SUFFIX}"

    @property
    def tinker_checkpoints(self) -> Path:
        """training=tinker: one row per trained step, written once its state and sampler are saved."""
        return self.directory / TINKER_CHECKPOINTS_FILE

    @property
    def tinker_policy_log(self) -> Path:
        """training=tinker: the Tinker policy server's output."""
        return self.directory / TINKER_POLICY_LOG

    @property
    def scorer_state(self) -> Path:
        """Where the task's scorer may keep files of its own: the state directory itself."""
        return self.state_dir

    @property
    def trainer_checkpoints(self) -> Path:
        """The trainer's Megatron checkpoints, whose marker says an update is durable."""
        return reef_runtime.trainer_checkpoint_dir(self.state_dir)

    @property
    def trainer_checkpoint_marker(self) -> Path:
        """The file Megatron writes into `trainer_checkpoints` once a checkpoint is durable."""
        return self.trainer_checkpoints / CHECKPOINT_MARKER_FILE

    @property
    def trainer_job_marker(self) -> Path:
        """The trainer's record of its latest training job, settled once its commit is durable."""
        return reef_runtime.trainer_hf_dir(self.state_dir) / JOB_MARKER_FILE

    @property
    def stack_dir(self) -> Path:
        """The stack `atoll stack up` starts for the run: its state, logs and Reef's run directory."""
        return reef_runtime.default_stack_dir(self.state_dir)

    def reef_run_dir(self, environ: Mapping[str, str]) -> Path:
        """Reef's run directory: `REEF_RUN_DIR` in `environ` (a job's stack), else `stack_dir`'s.

        Reef writes its runtime files there, which name the Ray cluster its trainer joined.
        """
        return reef_runtime.run_dir(self.state_dir, environ)
