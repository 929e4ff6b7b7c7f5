"""The training gate fails closed on each of its conditions; the barrier follows Reef's status."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import threading
import time
from pathlib import Path

import pytest

from atoll.core.reef_runtime import RayRuntime
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled
from atoll.guidance_ttt.services.reef_guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.services.training_barrier import (
    RayActorHealth,
    ReefTrainingBarrier,
    SearchOnlyBarrier,
    StepExpectation,
    TrainingCommit,
    TrainingGateFailed,
    TrainingInvariantFailed,
    TrainingTimeout,
    check_commit,
    commit_from_health,
    commit_from_job_marker,
    scenario_progress,
)

pytest_plugins = ["support.fixtures"]

EXPECTED = StepExpectation(
    step=2, groups=2, rollouts_per_group=4, rollouts=8, non_constant_groups=1
)


def _health(**overrides) -> dict:
    """A health report laid out as reef-infra's training bridge actor reports it."""
    metrics = {
        "train/grad_norm": 0.42,
        "train/global_batch_size": 4,
        "train/lora_trainable_parameters": 1_000_000,
        "train/lora_base_trainable_parameters": 0,
        "train/lora_b_nonzero": 5_000,
        "train/lora_b_l1": 12.5,
    }
    metrics.update(overrides)
    return {
        "ok": True,
        "phase": "serving",
        "completed_train_steps": 3,
        "last_train_rollout_id": 2,
        "last_weight_version": "v3",
        "last_train_metrics": metrics,
    }


@pytest.fixture
def good(tmp_path: Path) -> TrainingCommit:
    marker = tmp_path / "latest_checkpointed_iteration.txt"
    marker.write_text("3\n")
    return commit_from_health(_health(), marker)


def test_a_sound_update_passes(good):
    check_commit(good, EXPECTED, completed_steps=3)
    assert good.metrics["train/grad_norm"] == 0.42
    assert (good.completed_steps, good.rollout_id, good.global_batch_size) == (3, 2, 4)


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"health_ok": False}, "health"),
        ({"health_ok": None}, "health"),
        ({"phase": "updating"}, "phase"),
        ({"completed_steps": 2}, "completed 2 steps, expected 3"),
        ({"rollout_id": 1}, "rollout id"),
        ({"grad_norm": 0.0}, "grad norm"),
        ({"grad_norm": math.nan}, "grad norm"),
        ({"grad_norm": math.inf}, "grad norm"),
        ({"grad_norm": None}, "grad norm"),
        ({"global_batch_size": 8}, "global batch size"),
        ({"trainable_lora_params": 0}, "LoRA parameters"),
        ({"trainable_base_params": 3}, "base parameters"),
        ({"trainable_base_params": None}, "base parameters"),
        ({"lora_b_nonzero": 0}, "non-zero"),
        ({"lora_b_l1": 0.0}, "L1"),
        ({"lora_b_l1": math.inf}, "L1"),
        ({"checkpoint_marker": None}, "checkpoint marker"),
        ({"checkpoint_marker": "/nonexistent/marker"}, "checkpoint marker"),
    ],
)
def test_each_failing_condition_stops_the_commit(good, change, complaint):
    with pytest.raises(TrainingGateFailed, match=complaint):
        check_commit(dataclasses.replace(good, **change), EXPECTED, completed_steps=3)


def test_incomplete_grid_fails_even_if_reef_agrees(good):
    short = dataclasses.replace(EXPECTED, rollouts=7)
    with pytest.raises(TrainingGateFailed, match="the step has 7 rollouts"):
        check_commit(good, short, completed_steps=3)


def test_degenerate_step_expects_one_group_of_batch(good):
    degenerate = dataclasses.replace(EXPECTED, non_constant_groups=0)
    check_commit(good, degenerate, completed_steps=3)
    assert degenerate.global_batch_size == 4


def test_missing_health_fields_fail_closed(tmp_path):
    with pytest.raises(TrainingGateFailed) as caught:
        check_commit(commit_from_health({"ok": True}, None), EXPECTED, completed_steps=3)
    for complaint in ("grad norm", "LoRA", "checkpoint marker", "rollout id"):
        assert complaint in str(caught.value)


def _status(step: int, failed: list | None = None, error: str | None = None) -> dict:
    return {
        "error": error,
        "scenarios": {"tttd": {"scenario_step": step, "processor": {"failed_steps": failed or []}}},
    }


def test_failed_step_is_an_invariant_failure_not_a_wait(tmp_path):
    barrier = ReefTrainingBarrier(
        lambda: _status(2, failed=[{"step": 2, "reason": "releases"}]),
        "tttd",
        health=_health,
        poll_interval_s=0.01,
        timeout_s=30,
    )
    barrier.start(2)
    with pytest.raises(TrainingInvariantFailed, match="failed_steps"):
        barrier.await_training(EXPECTED)
    with pytest.raises(TrainingInvariantFailed, match="Reef reports an error: boom"):
        scenario_progress(_status(0, error="boom"), "tttd")


def test_barrier_waits_for_training_and_serving_then_gates(tmp_path):
    marker = tmp_path / "latest_checkpointed_iteration.txt"
    marker.write_text("3")
    statuses = iter([_status(2), _status(2), _status(2), _status(3), _status(3), _status(3)])
    before = _health() | {"completed_train_steps": 2, "last_train_rollout_id": 1}
    healths = iter([before, _health() | {"phase": "updating_weights"}, _health()])
    barrier = ReefTrainingBarrier(
        lambda: next(statuses),
        "tttd",
        health=lambda: next(healths),
        checkpoint_marker=marker,
        poll_interval_s=0.01,
        timeout_s=30,
    )
    barrier.start(2)
    commit = barrier.await_training(EXPECTED)
    assert commit is not None and commit.phase == "serving"
    assert barrier.mode == "reef"


@pytest.mark.slow
def test_barrier_against_real_reef_times_out_clearly(reef_server):
    client = GuidanceClient(
        ReefEndpoint(reef_server.url, reef_server.token),
        scenario="never-trained",
        model="m",
        max_completion_tokens=8,
    )
    barrier = ReefTrainingBarrier(
        client.status, "never-trained", health=_health, poll_interval_s=0.05, timeout_s=0.3
    )
    assert barrier.trainer_step() == 0
    barrier.start(2)
    with pytest.raises(TrainingTimeout, match="did not finish training step 2"):
        barrier.await_training(EXPECTED)


def test_a_cancel_ends_the_barrier_wait_at_once():
    cancellation = Cancellation()
    barrier = ReefTrainingBarrier(
        lambda: _status(2),  # never trains
        "tttd",
        health=_health,
        poll_interval_s=60.0,
        timeout_s=600,
        cancellation=cancellation,
    )
    barrier.start(2)
    threading.Timer(0.2, cancellation.cancel).start()
    started = time.monotonic()
    with pytest.raises(RunCancelled, match="waiting for Reef to train"):
        barrier.await_training(EXPECTED)
    assert time.monotonic() - started < 5  # not the 60 s poll interval


def test_search_only_barrier_trains_nothing_and_says_so():
    barrier = SearchOnlyBarrier()
    assert barrier.mode == "search-only"
    assert barrier.trainer_step() is None
    barrier.start(0)
    assert barrier.await_training(EXPECTED) is None


def test_without_the_ray_extra_the_actor_read_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # a machine without the extra: `import ray` fails
    with pytest.raises(TrainingInvariantFailed, match=r"atoll-guidance-ttt\[ray\]"):
        RayActorHealth(RayRuntime("10.0.0.5:6379"))()


def test_a_barrier_before_the_start_is_refused():
    barrier = ReefTrainingBarrier(lambda: _status(3), "tttd", health=_health)
    with pytest.raises(TrainingInvariantFailed, match="before the run told the barrier"):
        barrier.await_training(EXPECTED)


def test_a_trainer_without_a_step_count_cannot_be_gated():
    barrier = ReefTrainingBarrier(lambda: _status(2), "tttd", health=lambda: {"ok": True})
    with pytest.raises(TrainingInvariantFailed, match="completed_train_steps=None"):
        barrier.start(2)


def _job_marker(path: Path, **overrides) -> Path:
    marker = {
        "job_id": "job-2",
        "status": "COMPLETE",
        "commit_acknowledged": True,
        "rollout_id": 2,
        "train_metrics": _health()["last_train_metrics"],
    }
    path.write_text(json.dumps(marker | overrides))
    return path


def test_an_update_made_before_a_restart_is_read_from_the_durable_job_marker(tmp_path):
    checkpoint = tmp_path / "latest_checkpointed_iteration.txt"
    checkpoint.write_text("3")
    restarted = {"ok": True, "phase": "serving", "completed_train_steps": 0}
    commit = commit_from_job_marker(restarted, _job_marker(tmp_path / "job.json"), checkpoint)
    check_commit(commit, EXPECTED, completed_steps=None)
    assert (commit.rollout_id, commit.grad_norm, commit.completed_steps) == (2, 0.42, 0)


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"status": "UPDATING_WEIGHTS"}, "status 'UPDATING_WEIGHTS'"),
        ({"commit_acknowledged": False}, "commit acknowledged: False"),
    ],
)
def test_a_job_marker_of_an_unsettled_job_fails_the_gate(tmp_path, overrides, complaint):
    marker = _job_marker(tmp_path / "job.json", **overrides)
    with pytest.raises(TrainingGateFailed, match=complaint):
        commit_from_job_marker({"ok": True, "phase": "serving"}, marker, None)
    with pytest.raises(TrainingGateFailed, match="cannot be read"):
        commit_from_job_marker({"ok": True}, tmp_path / "absent.json", None)
    stale = _job_marker(tmp_path / "stale.json", rollout_id=1)
    commit = commit_from_job_marker({"ok": True, "phase": "serving"}, stale, None)
    with pytest.raises(TrainingGateFailed, match="rollout id is 1, expected 2"):
        check_commit(commit, EXPECTED, completed_steps=None)
