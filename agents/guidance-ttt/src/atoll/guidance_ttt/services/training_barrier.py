"""The training barrier: wait for Reef to train a step, then check the update before trusting it.

The archive of step s is committed only once the guidance model was really
updated on step s's grid, so every check here fails closed: a missing field, a
non-finite number or a step Reef lists as failed is an error, never a pass.
Reef is reached through one small interface (`TrainingBarrier`) with two
implementations: the real one (Reef's `GET /reef/status` plus the training
bridge actor's health) and a search-only one that trains nothing. Search-only
is a choice the user makes; it is recorded everywhere and never a fallback.

The actor counts `completed_train_steps` per process: Reef's trainer starts
at 0 whenever Reef starts, and a run may resume against a Reef started for
the resumed job. The gate therefore counts the steps trained since the run
(re)started, from the trainer's count at that moment, as the reference
harness does. A run may also resume to find its open step already trained
(the previous run stopped at the barrier, after Reef trained the step but
before the archive was committed): that step's update is checked from the
actor's report when the same trainer process made it, and otherwise from the
trainer's durable job marker, which records the committed job's metrics.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from atoll.core.reef_runtime import RayRuntime
from atoll.core.termination import sigterm_kept
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled

SERVING_PHASE = "serving"

# The status of the trainer's job marker (`RunDir.trainer_job_marker`) once its commit is durable.
JOB_COMMITTED = "COMPLETE"

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
TINKER_MODE = "tinker"  # atoll's own trainer on the Tinker API (atoll.guidance_ttt.training)


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


def check_commit(
    commit: TrainingCommit, expected: StepExpectation, completed_steps: int | None
) -> None:
    """Fail closed unless every condition of the training gate holds.

    `completed_steps` is the count the trainer process must report after this
    update; None when an earlier trainer process made the update (its durable
    job marker, not the live count, vouches for it).
    """
    problems: list[str] = []
    grid = expected.groups * expected.rollouts_per_group
    if expected.rollouts != grid:
        problems.append(f"the step has {expected.rollouts} rollouts, the grid needs {grid}")
    if commit.health_ok is not True:
        problems.append(f"trainer health is {commit.health_ok!r}, not ok")
    if commit.phase != SERVING_PHASE:
        problems.append(f"trainer phase is {commit.phase!r}, not {SERVING_PHASE!r}")
    if completed_steps is not None and commit.completed_steps != completed_steps:
        problems.append(
            f"trainer completed {commit.completed_steps} steps, expected {completed_steps}"
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


def commit_from_job_marker(
    health: Mapping[str, Any], job_marker: Path | None, checkpoint_marker: Path | None
) -> TrainingCommit:
    """The gate's facts about an update an earlier trainer process made: its durable job marker.

    Health and phase are the live trainer's; the rollout id and the metrics
    are the marker's, which Reef settles only once the job's commit is
    durable. A marker that is absent, unreadable or not settled fails the gate.
    """
    where = "no job marker path is known" if job_marker is None else str(job_marker)
    try:
        data = json.loads(job_marker.read_text(encoding="utf-8")) if job_marker else None
    except (OSError, ValueError) as exc:
        raise TrainingGateFailed(
            f"the trainer's job marker {where} cannot be read: {exc}"
        ) from None
    if not isinstance(data, Mapping):
        raise TrainingGateFailed(f"the trainer's job marker {where} holds no job")
    if data.get("status") != JOB_COMMITTED or data.get("commit_acknowledged") is not True:
        raise TrainingGateFailed(
            f"the trainer's job marker {where} shows job {data.get('job_id')!r} in status "
            f"{data.get('status')!r} (commit acknowledged: {data.get('commit_acknowledged')!r}), "
            f"not a committed update"
        )
    metrics = data.get("train_metrics")
    metrics = dict(metrics) if isinstance(metrics, Mapping) else {}
    return dataclasses.replace(
        commit_from_health({**health, HEALTH_METRICS: metrics}, checkpoint_marker),
        rollout_id=_int(data.get("rollout_id")),
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
    processor = entry.get("processor")
    failed = (processor.get("failed_steps") if isinstance(processor, Mapping) else None) or []
    if not isinstance(step, int) or not isinstance(failed, list):
        raise TrainingInvariantFailed(f"Reef status for scenario {scenario!r} is malformed")
    return ScenarioProgress(step, tuple(_step_number(item) for item in failed))


def _step_number(item: Any) -> int:
    if isinstance(item, Mapping):
        item = item.get("step")
    if not isinstance(item, int) or isinstance(item, bool):
        raise TrainingInvariantFailed(f"Reef lists a failed step it does not number: {item!r}")
    return item


class TrainingBarrier(Protocol):
    """What the run controller needs from the trainer."""

    mode: str

    def trainer_step(self) -> int | None:
        """How many steps of the run's scenario the trainer has trained (None: it trains nothing)."""
        ...

    def start(self, step: int) -> None:
        """The run (re)starts at `step`: note where the trainer is, before any step is trained."""
        ...

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        """Block until `expected.step` is trained and passes the gate (None: nothing trains)."""
        ...


class SearchOnlyBarrier:
    """Trains nothing: the search runs with a frozen guidance model, by explicit choice."""

    mode = SEARCH_ONLY_MODE

    def trainer_step(self) -> int | None:
        return None

    def start(self, step: int) -> None:
        return None

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        return None


class RayActorHealth:
    """Reads the training bridge actor's health in the Ray cluster Reef's trainer joined.

    Ray is imported only when the health is read (it is the `ray` extra).
    """

    def __init__(self, runtime: RayRuntime, timeout_s: float = 60.0) -> None:
        self.runtime = runtime
        self.timeout_s = timeout_s

    def __call__(self) -> Mapping[str, Any]:
        try:
            import ray  # type: ignore[import-not-found,unused-ignore]  # the optional `ray` extra
        except ImportError as exc:
            raise TrainingInvariantFailed(
                "reading Reef's training bridge needs Ray: install atoll-guidance-ttt[ray]"
            ) from exc
        runtime = self.runtime
        if not ray.is_initialized():
            with sigterm_kept():  # Ray's own SIGTERM handler would outlive `ray.shutdown()`
                ray.init(
                    address=runtime.address,
                    namespace=runtime.namespace,
                    ignore_reinit_error=True,
                    log_to_driver=False,
                )
        handle = ray.get_actor(runtime.actor, namespace=runtime.namespace)
        health: object = ray.get(handle.health.remote(), timeout=self.timeout_s)
        if not isinstance(health, Mapping):
            raise TrainingInvariantFailed(
                f"training bridge {runtime.actor!r} returned no health object"
            )
        return health


@dataclass(frozen=True)
class _Origin:
    """Where the trainer stood when the run (re)started."""

    step: int
    completed: int
    trained_ahead: bool
    health: Mapping[str, Any]

    @property
    def first_trained(self) -> int:
        """The first step this trainer process trains for the run."""
        return self.step + 1 if self.trained_ahead else self.step


class ReefTrainingBarrier:
    """Reef trains: poll its status until the step is trained, then gate the actor's report.

    `checkpoint_marker` and `job_marker` are the trainer's durable files
    (`RunDir.trainer_checkpoint_marker`, `RunDir.trainer_job_marker`).
    """

    mode = REEF_MODE

    def __init__(
        self,
        status: Callable[[], Mapping[str, Any]],
        scenario: str,
        *,
        health: Callable[[], Mapping[str, Any]],
        checkpoint_marker: Path | None = None,
        job_marker: Path | None = None,
        poll_interval_s: float = 5.0,
        timeout_s: float = 4 * 3600.0,
        cancellation: Cancellation | None = None,
    ) -> None:
        self._status = status
        self._cancellation = cancellation
        self._health = health
        self._checkpoint_marker = checkpoint_marker
        self._job_marker = job_marker
        self._origin: _Origin | None = None
        self.scenario = scenario
        self.poll_interval_s = poll_interval_s
        self.timeout_s = timeout_s

    def trainer_step(self) -> int | None:
        progress = scenario_progress(self._status(), self.scenario)
        return 0 if progress is None else progress.scenario_step

    def start(self, step: int) -> None:
        health = self._health()
        completed = _int(health.get(HEALTH_COMPLETED_STEPS))
        if completed is None or completed < 0:
            raise TrainingInvariantFailed(
                f"Reef's training bridge reports {HEALTH_COMPLETED_STEPS}="
                f"{health.get(HEALTH_COMPLETED_STEPS)!r}; the gate cannot count the steps it trains"
            )
        ahead = self.trainer_step() == step + 1
        self._origin = _Origin(step, completed, ahead, dict(health))

    def await_training(self, expected: StepExpectation) -> TrainingCommit | None:
        origin = self._origin
        if origin is None or expected.step < origin.step:
            raise TrainingInvariantFailed(
                f"the training barrier of step {expected.step} was reached before the run "
                "told the barrier where it starts"
            )
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
                    commit, completed = self._commit(origin, expected.step)
                    # Trained but still loading the new weights: serving resumes shortly.
                    if not (commit.health_ok is True and commit.phase != SERVING_PHASE):
                        check_commit(commit, expected, completed)
                        return commit
            if time.monotonic() >= deadline:
                raise TrainingTimeout(
                    f"Reef did not finish training step {expected.step} of scenario "
                    f"{self.scenario!r} within {self.timeout_s:g} s"
                )
            self._pause()

    def _commit(self, origin: _Origin, step: int) -> tuple[TrainingCommit, int | None]:
        """The update of `step` and the trainer's expected count of completed steps after it."""
        health = self._health()
        if step < origin.first_trained:  # trained before the run (re)started
            if _int(origin.health.get(HEALTH_ROLLOUT_ID)) == step:  # by this trainer process
                return commit_from_health(health, self._checkpoint_marker), origin.completed
            return commit_from_job_marker(health, self._job_marker, self._checkpoint_marker), None
        completed = origin.completed + step - origin.first_trained + 1
        return commit_from_health(health, self._checkpoint_marker), completed

    def _pause(self) -> None:
        """Wait one poll interval; a cancelled run ends the wait at once."""
        if self._cancellation is None:
            time.sleep(self.poll_interval_s)
        elif self._cancellation.wait(self.poll_interval_s):
            raise RunCancelled("the run was cancelled while waiting for Reef to train")
