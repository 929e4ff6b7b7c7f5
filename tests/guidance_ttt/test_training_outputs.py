"""A Tinker run's trial gets its update metrics per step and a training plot; other runs do not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harbor.models.agent.context import AgentContext

from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.harbor import trial_outputs
from atoll.guidance_ttt.harbor.training_plot import metrics_line, plot_training
from atoll.guidance_ttt.harbor.trial_outputs import (
    METRICS_FILE,
    PLOT_FILE,
    STEPS_FILE,
    TRAINING_PLOT_FILE,
    write_outputs,
)
from atoll.guidance_ttt.state.run_report import RunReport, StepRow
from atoll.judge.plugin import task_dir

UPDATED = {
    "reward_mean": 0.25,
    "reward_max": 1.0,
    "advantage_min": -0.5,
    "advantage_mean": 0.0,
    "advantage_max": 0.75,
    "betas": [0.1, 0.4],
    "non_constant_groups": 2,
    "trained_samples": 4,
    "datums": 4,
    "updated": True,
    "loss": 0.125,
    "kl_sample_train": 0.002,
    "kl_policy_base": 0.01,
    "state_path": "tinker://run/weights/step-00000",
    "sampler_path": "tinker://run/sampler_weights/step-00000",
    "sampled_by": ["tinker://base"],
    "seconds": {"forward_backward": 1.5, "optim_step": 0.25, "save": 2.0, "total": 4.0},
}
# A degenerate step: every group constant, nothing trained, so no loss, KL or update.
DEGENERATE = {
    "reward_mean": 0.5,
    "reward_max": 0.5,
    "advantage_min": None,
    "advantage_mean": None,
    "advantage_max": None,
    "betas": [0.5, 0.5],
    "non_constant_groups": 0,
    "trained_samples": 0,
    "datums": 0,
    "updated": False,
    "state_path": "tinker://run/weights/step-00001",
    "sampler_path": "tinker://run/sampler_weights/step-00001",
    "sampled_by": ["tinker://run/sampler_weights/step-00000"],
    "seconds": {"total": 0.5},
}


def _row(step: int, train_metrics: dict[str, Any], best: float, elapsed: float) -> StepRow:
    summary = {
        "step": step,
        "elapsed_s": elapsed,
        "sampled": 4,
        "valid": 4,
        "well_formed_guidance": 4,
        "non_constant_groups": train_metrics.get("non_constant_groups", 0),
        "degenerate": not train_metrics.get("updated", False),
        "training": "tinker",
        "grad_norm": None,
        "train_metrics": train_metrics,
    }
    return StepRow(
        summary=summary,
        receipts=[f"receipt-{step}"],
        rejected_receipts=[],
        guidance_tokens=10,
        executor_tokens=20,
        archive_best=best,
        archive_median=best / 2,
        archive_nodes=3 + step,
    )


def _report(training: str) -> RunReport:
    rows = [_row(0, UPDATED, 3.0, 12.5), _row(1, DEGENERATE, 4.0, 8.0)]
    if training != "tinker":
        for row in rows:
            row.summary.update(training=training, train_metrics={})
    return RunReport("run-1", "scenario-1", training, {"name": "test"}, rows)


def _write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, training: str) -> Path:
    monkeypatch.setattr(trial_outputs, "read_report", lambda state_dir: _report(training))
    logs = tmp_path / "logs"
    logs.mkdir()
    config = agent_config({"training": "off", "state_dir": str(tmp_path / "state")})
    write_outputs(config, load_task(task_dir("polyomino_packing")), logs, AgentContext())
    return logs


def test_a_tinker_run_writes_its_update_metrics_and_a_training_plot(monkeypatch, tmp_path):
    logs = _write(monkeypatch, tmp_path, "tinker")

    lines = [json.loads(x) for x in (logs / METRICS_FILE).read_text().splitlines()]
    assert lines == [
        {
            "step": 0,
            "reward_mean": 0.25,
            "reward_max": 1.0,
            "best_raw_score_so_far": 3.0,
            "advantage_min": -0.5,
            "advantage_mean": 0.0,
            "advantage_max": 0.75,
            "betas": [0.1, 0.4],
            "kl_policy_base": 0.01,
            "loss": 0.125,
            "kl_sample_train": 0.002,
            "non_constant_groups": 2,
            "trained_samples": 4,
            "updated": True,
            "sampler_path": "tinker://run/sampler_weights/step-00000",
            "seconds": {"forward_backward": 1.5, "optim_step": 0.25, "save": 2.0, "total": 4.0},
            "elapsed_s": 12.5,
        },
        {
            "step": 1,
            "reward_mean": 0.5,
            "reward_max": 0.5,
            "best_raw_score_so_far": 4.0,
            "advantage_min": None,
            "advantage_mean": None,
            "advantage_max": None,
            "betas": [0.5, 0.5],
            "kl_policy_base": None,
            "loss": None,
            "kl_sample_train": None,
            "non_constant_groups": 0,
            "trained_samples": 0,
            "updated": False,
            "sampler_path": "tinker://run/sampler_weights/step-00001",
            "seconds": {"total": 0.5},
            "elapsed_s": 8.0,
        },
    ]
    assert (logs / TRAINING_PLOT_FILE).read_bytes()[:4] == b"\x89PNG"
    assert (logs / PLOT_FILE).read_bytes()[:4] == b"\x89PNG"
    assert [json.loads(x)["step"] for x in (logs / STEPS_FILE).read_text().splitlines()] == [0, 1]


@pytest.mark.parametrize("training", ["search-only", "reef"])
def test_other_training_modes_write_no_training_outputs(monkeypatch, tmp_path, training):
    logs = _write(monkeypatch, tmp_path, training)

    assert (logs / STEPS_FILE).exists() and (logs / PLOT_FILE).exists()
    assert not (logs / METRICS_FILE).exists()
    assert not (logs / TRAINING_PLOT_FILE).exists()


def test_absent_metrics_read_as_none_and_still_plot(tmp_path):
    row = _row(0, {}, 1.0, 2.0)
    row.summary.pop("train_metrics")
    line = metrics_line(row)
    assert line["loss"] is None and line["reward_mean"] is None and line["seconds"] is None
    # The summary's own count stands in when the update did not record one.
    assert line["non_constant_groups"] == 0 and line["best_raw_score_so_far"] == 1.0

    path = plot_training([row], tmp_path / "nested" / "training.png", score_label="s", title="t")
    assert path.read_bytes()[:4] == b"\x89PNG"
    empty = plot_training([], tmp_path / "empty.png", score_label="s", title="t")
    assert empty.read_bytes()[:4] == b"\x89PNG"
