"""Reef's trainer as the training gate sees it, for runs with `training=on` on a CPU machine.

Reef's tttd recipe trains a step once every slot of its grid is reported; its
trainer keeps its progress durably (the scenario step, the Megatron
checkpoint marker, the job marker beside the published adapters), while the
training bridge actor counts `completed_train_steps` per process, from 0 at
every start of Reef. This model keeps exactly that split: it trains when the
real Reef server holds a complete grid of reports for the next step, writes
the two marker files where the run's config says the trainer keeps them, and
`restart()` is a new Reef process: durable progress kept, counter back to 0.
It stands in only for the GPU trainer; the reports it counts are the ones the
run really posted to the real Reef.
"""

from __future__ import annotations

import json
import threading
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.guidance_ttt.state.run_dir import RunDir

GOOD_METRICS = {
    "train/grad_norm": 0.42,
    "train/lora_trainable_parameters": 1_000_000,
    "train/lora_base_trainable_parameters": 0,
    "train/lora_b_nonzero": 5_000,
    "train/lora_b_l1": 12.5,
}


class SimulatedTrainer:
    """One scenario's trainer: durable progress on disk, a step counter per Reef process."""

    def __init__(
        self, reef_server: Any, scenario: str, state_dir: Path, groups: int, rollouts: int
    ) -> None:
        self.reef_server = reef_server
        self.scenario = scenario
        self.groups = groups
        self.rollouts = rollouts
        self.checkpoint_marker = RunDir(state_dir).trainer_checkpoint_marker
        self.job_marker = RunDir(state_dir).trainer_job_marker
        self.trained = 0  # durable: Reef's scenario step
        self.metrics = dict(GOOD_METRICS)  # what the next update reports
        self.on_train: Callable[[int], None] | None = None
        self.serving_delay_reads = 0  # health reads after a step that still say "updating"
        self._lock = threading.Lock()
        self.restart()

    def restart(self) -> None:
        """A new Reef process: what is on disk stays, the actor's counters start again."""
        with self._lock:
            self.completed = 0
            self.last_rollout: int | None = None
            self.last_metrics: dict[str, Any] = {}
            self._updating = 0

    def status(self) -> dict[str, Any]:
        """`GET /reef/status` for the scenario, training a step whose grid is complete."""
        self._train_complete_grid()
        with self._lock:
            entry = {"scenario_step": self.trained, "processor": {"failed_steps": []}}
        return {"error": None, "scenarios": {self.scenario: entry}}

    def health(self) -> dict[str, Any]:
        """The training bridge actor's `health()`."""
        with self._lock:
            phase = "serving"
            if self._updating:
                self._updating -= 1
                phase = "updating_weights"
            return {
                "ok": True,
                "phase": phase,
                "start_rollout_id": self.trained,
                "completed_train_steps": self.completed,
                "last_train_rollout_id": self.last_rollout,
                "last_train_metrics": dict(self.last_metrics),
            }

    def _train_complete_grid(self) -> None:
        grid = self.groups * self.rollouts
        reports = len(self._reports())
        with self._lock:
            if reports < (self.trained + 1) * grid:
                return
            step = self.trained
            metrics = {**self.metrics, "train/global_batch_size": self._batch(step)}
            self.checkpoint_marker.parent.mkdir(parents=True, exist_ok=True)
            self.checkpoint_marker.write_text(f"{step + 1}\n")
            self.job_marker.parent.mkdir(parents=True, exist_ok=True)
            self.job_marker.write_text(
                json.dumps(
                    {
                        "job_id": f"job-{step}",
                        "status": "COMPLETE",
                        "commit_acknowledged": True,
                        "rollout_id": step,
                        "scenario_step": step + 1,
                        "train_metrics": metrics,
                    }
                )
            )
            self.trained = step + 1
            self.completed += 1
            self.last_rollout = step
            self.last_metrics = metrics
            self._updating = self.serving_delay_reads
        if self.on_train is not None:
            self.on_train(step)

    def _reports(self) -> list[dict[str, Any]]:
        try:
            return self.reef_server.records(self.scenario, "report")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # Reef knows the scenario from its first record on
                return []
            raise

    def _batch(self, step: int) -> int:
        """(non-constant groups or 1) x R, from the rewards Reef holds for the step."""
        rewards: dict[int, set[float]] = {}
        for record in self._reports():
            payload = self.reef_server.record(self.scenario, record["agent_record_id"])["payload"]
            metadata = payload.get("metadata") or {}
            if metadata.get("step") == step:
                rewards.setdefault(metadata["group"], set()).add(record["score"])
        non_constant = sum(1 for values in rewards.values() if len(values) > 1)
        return max(non_constant, 1) * self.rollouts
