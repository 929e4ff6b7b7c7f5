"""The training barrier: wait for Reef to train a step, then check the update before trusting it.

The archive of step s is committed only once the guidance model was really
updated on step s's grid, so every check here fails closed: a missing field, a
non-finite number or a step Reef lists as failed is an error, never a pass.
Reef is reached through one small interface (`TrainingBridge`) with two
implementations: the real one (Reef's `GET /reef/status` plus the training
bridge actor's health) and a search-only one that trains nothing. Search-only
is a choice the user makes; it is recorded everywhere and never a fallback.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from atoll.guidance_ttt.cancel import Cancellation, RunCancelled

TRAIN_BRIDGE_ACTOR = "reef-train-bridge"
TRAIN_BRIDGE_NAMESPACE = "reef"
SERVING_PHASE = "serving"

# Megatron writes this file into its save directory once a checkpoint is durable.
CHECKPOINT_MARKER_FILE = "latest_checkpointed_iteration.txt"

# Keys of the training bridge actor's `health()` report (reef-infra's Slime
# bridge): top-level job state, and the last update's metrics under
# `last_train_metrics` with the trainer's own `train/...` names.
HEALTH_OK = "ok"
HEALTH_PHASE = "phase"
HEALTH_COMPLETED_STEPS = "completed_train_steps"
HEALTH_ROLLOUT_ID = "last_train_rollout_id"
HEALTH_METRICS = "last_train_metrics"
METRIC_GRAD_NORM = "train/grad_norm"
METRIC_GLOBAL_BATCH = "train/global_batch_size"
METRIC_LORA_TRAINABLE = "train/lora_trainable_parameters"
METRIC_BASE_TRAINABLE = "train/lora_base_trainable_parameters"
METRIC_LORA_B_NONZERO = "train/lora_b_nonzero"
METRIC_LORA_B_L1 = "train/lora_b_l1"

REEF_MODE = "reef"
SEARCH_ONLY_MODE = "search-only"


class TrainingGateFailed(RuntimeError):
    """Reef's update for a step does not pass the gate; the archive is not committed."""


class TrainingInvariantFailed(RuntimeError):
    """Reef reports the step as failed (e.g. its reports spanned serving releases)."""


class TrainingTimeout(RuntimeError):
    """Reef did not finish training the step in time."""


@dataclass(frozen=True)
class StepExpectation:
    """What the controller knows about the step it just finished."""

    step: int
    groups: int
    rollouts_per_group: int
    rollouts: int
    non_constant_groups: int

    @property
    def global_batch_size(self) -> int:
        return max(self.non_constant_groups, 1) * self.rollouts_per_group


@dataclass(frozen=True)
class TrainingCommit:
    """What Reef's trainer says about its last update, in the gate's terms."""

    health_ok: bool | None
    phase: str | None
    completed_steps: int | None
    rollout_id: int | None
    grad_norm: float | None
    global_batch_size: int | None
    trainable_lora_params: int | None
    trainable_base_params: int | None
    lora_b_nonzero: int | None
    lora_b_l1: float | None
    checkpoint_marker: str | None
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def check_commit(commit: TrainingCommit, expected: StepExpectation) -> None:
    """Fail closed unless every condition of the training gate holds."""
    problems: list[str] = []
    grid = expected.groups * expected.rollouts_per_group
    if expected.rollouts != grid:
        problems.append(f"the step has {expected.rollouts} rollouts, the grid needs {grid}")
    if commit.health_ok is not True:
        problems.append(f"trainer health is {commit.health_ok!r}, not ok")
    if commit.phase != SERVING_PHASE:
        problems.append(f"trainer phase is {commit.phase!r}, not {SERVING_PHASE!r}")
    if commit.completed_steps != expected.step + 1:
        problems.append(
            f"trainer completed {commit.completed_steps} steps, expected {expected.step + 1}"
        )
    if commit.rollout_id != expected.step:
        problems.append(f"trainer rollout id is {commit.rollout_id}, expected {expected.step}")
    if not _finite_positive(commit.grad_norm):
        problems.append(f"grad norm {commit.grad_norm!r} is not finite and > 0")
    if commit.global_batch_size != expected.global_batch_size:
        problems.append(
            f"global batch size {commit.global_batch_size} != {expected.global_batch_size} "
            f"(({expected.non_constant_groups} non-constant groups or 1) x {expected.rollouts_per_group})"
        )
    if not (isinstance(commit.trainable_lora_params, int) and commit.trainable_lora_params > 0):
        problems.append(f"trainable LoRA parameters {commit.trainable_lora_params!r} is not > 0")
    if commit.trainable_base_params != 0:
        problems.append(f"trainable base parameters {commit.trainable_base_params!r} is not 0")
    if not (isinstance(commit.lora_b_nonzero, int) and commit.lora_b_nonzero > 0):
        problems.append(f"LoRA-B non-zero entries {commit.lora_b_nonzero!r} is not > 0")
    if not _finite_positive(commit.lora_b_l1):
        problems.append(f"LoRA-B L1 norm {commit.lora_b_l1!r} is not finite and > 0")
    if not commit.checkpoint_marker or not Path(commit.checkpoint_marker).is_file():
        problems.append(f"checkpoint marker {commit.checkpoint_marker!r} is not on disk")
    if problems:
        raise TrainingGateFailed(
            f"training of step {expected.step} fails the gate: " + "; ".join(problems)
        )


def _finite_positive(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def commit_from_health(health: Mapping[str, Any], checkpoint_marker: Path | None) -> TrainingCommit:
    """Read the gate's facts from the training bridge actor's health report.

    The actor reports `ok`, `phase`, `completed_train_steps` and
    `last_train_rollout_id` at the top level and the last update's metrics
    under `last_train_metrics`; the checkpoint marker is the trainer's file in
    its save directory. Absent fields stay None, which the gate rejects.
    """
    metrics = health.get(HEALTH_METRICS)
    metrics = dict(metrics) if isinstance(metrics, Mapping) else {}
    ok = health.get(HEALTH_OK)
    phase = health.get(HEALTH_PHASE)
    return TrainingCommit(
        health_ok=ok if isinstance(ok, bool) else None,
        phase=phase if isinstance(phase, str) else None,
        completed_steps=_int(health.get(HEALTH_COMPLETED_STEPS)),
        rollout_id=_int(health.get(HEALTH_ROLLOUT_ID)),
        grad_norm=_float(metrics.get(METRIC_GRAD_NORM)),
        global_batch_size=_int(metrics.get(METRIC_GLOBAL_BATCH)),
        trainable_lora_params=_int(metrics.get(METRIC_LORA_TRAINABLE)),
        trainable_base_params=_int(metrics.get(METRIC_BASE_TRAINABLE)),
        lora_b_nonzero=_int(metrics.get(METRIC_LORA_B_NONZERO)),
        lora_b_l1=_float(metrics.get(METRIC_LORA_B_L1)),
        checkpoint_marker=str(checkpoint_marker) if checkpoint_marker else None,
        metrics=metrics,
    )


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True)
class ScenarioProgress:
    """One scenario's training progress as `GET /reef/status` shows it."""

    scenario_step: int
    failed_steps: tuple[int, ...]


def scenario_progress(status: Mapping[str, Any], scenario: str) -> ScenarioProgress | None:
    """The scenario's progress, None while Reef does not know it yet; Reef's own error raises."""
    error = status.get("error")
    if error:
        raise TrainingInvariantFailed(f"Reef reports an error: {error}")
    scenarios = status.get("scenarios")
    if not isinstance(scenarios, Mapping) or scenario not in scenarios:
        return None
    entry = scenarios[scenario]
    if not isinstance(entry, Mapping):
        raise TrainingInvariantFailed(f"Reef status for scenario {scenario!r} is not an object")
    step = entry.get("scenario_step", 0)
    processor = entry.get("processor") if isinstance(entry.get("processor"), Mapping) else {}
    failed = processor.get("failed_steps") or []
    if not isinstance(step, int) or not isinstance(failed, list):
        raise TrainingInvariantFailed(f"Reef status for scenario {scenario!r} is malformed")
    return ScenarioProgress(step, tuple(_step_number(item) for item in failed))


def _step_number(item: Any) -> int:
    if isinstance(item, Mapping):
        item = item.get("step")
    if not isinstance(item, int) or isinstance(item, bool):
        raise TrainingInvariantFailed(f"Reef lists a failed step it does not number: {item!r}")
    return item


class TrainingBridge(Protocol):
    """What the run controller needs from the trainer."""

    mode: str

    def trainer_step(self) -> int | None:
        """How many steps the trainer has completed (None: it trains nothing)."""
        ...

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        """Block until `expected.step` is trained and passes the gate (None: nothing trains)."""
        ...


class SearchOnlyBridge:
    """Trains nothing: the search runs with a frozen guidance model, by explicit choice."""

    mode = SEARCH_ONLY_MODE

    def trainer_step(self) -> int | None:
        return None

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        return None


def ray_actor_health(
    actor: str = TRAIN_BRIDGE_ACTOR,
    namespace: str = TRAIN_BRIDGE_NAMESPACE,
    timeout_s: float = 60.0,
) -> Callable[[], Mapping[str, Any]]:
    """A reader of the training bridge actor's health; Ray is imported only when it is used."""

    def read() -> Mapping[str, Any]:
        try:
            import ray
        except ImportError as exc:
            raise TrainingInvariantFailed(
                "reading Reef's training bridge needs Ray: install atoll-guidance-ttt[ray]"
            ) from exc
        if not ray.is_initialized():
            ray.init(
                address="auto", namespace=namespace, ignore_reinit_error=True, log_to_driver=False
            )
        handle = ray.get_actor(actor, namespace=namespace)
        health = ray.get(handle.health.remote(), timeout=timeout_s)
        if not isinstance(health, Mapping):
            raise TrainingInvariantFailed(f"training bridge {actor!r} returned no health object")
        return health

    return read


class ReefTrainingBridge:
    """Reef trains: poll its status until the step is trained, then gate the actor's report."""

    mode = REEF_MODE

    def __init__(
        self,
        status: Callable[[], Mapping[str, Any]],
        scenario: str,
        *,
        health: Callable[[], Mapping[str, Any]] | None = None,
        checkpoint_dir: Path | None = None,
        poll_interval_s: float = 5.0,
        timeout_s: float = 4 * 3600.0,
        cancellation: Cancellation | None = None,
    ) -> None:
        self._status = status
        self._cancellation = cancellation
        self._health = health or ray_actor_health()
        self._checkpoint_marker = (
            checkpoint_dir / CHECKPOINT_MARKER_FILE if checkpoint_dir else None
        )
        self.scenario = scenario
        self.poll_interval_s = poll_interval_s
        self.timeout_s = timeout_s

    def trainer_step(self) -> int | None:
        progress = scenario_progress(self._status(), self.scenario)
        return 0 if progress is None else progress.scenario_step

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            progress = scenario_progress(self._status(), self.scenario)
            if progress is not None:
                if expected.step in progress.failed_steps:
                    raise TrainingInvariantFailed(
                        f"Reef lists step {expected.step} of scenario {self.scenario!r} under "
                        "failed_steps (its reports span more than one serving release); "
                        "it will never train"
                    )
                if progress.scenario_step > expected.step + 1:
                    raise TrainingInvariantFailed(
                        f"Reef is at step {progress.scenario_step} of scenario {self.scenario!r}, "
                        f"past step {expected.step + 1}: another writer trains this scenario"
                    )
                if progress.scenario_step == expected.step + 1:
                    commit = commit_from_health(self._health(), self._checkpoint_marker)
                    # Trained but still loading the new weights: serving resumes shortly.
                    if not (commit.health_ok is True and commit.phase != SERVING_PHASE):
                        check_commit(commit, expected)
                        return commit
            if time.monotonic() >= deadline:
                raise TrainingTimeout(
                    f"Reef did not finish training step {expected.step} of scenario "
                    f"{self.scenario!r} within {self.timeout_s:g} s"
                )
            self._pause()

    def _pause(self) -> None:
        """Wait one poll interval; a cancelled run ends the wait at once."""
        if self._cancellation is None:
            time.sleep(self.poll_interval_s)
        elif self._cancellation.wait(self.poll_interval_s):
            raise RunCancelled("the run was cancelled while waiting for Reef to train")
