"""Held-out curves for real: `atoll pi train hidden --eval-every 1` on the tests' shared local
Tinker (tiny model, SkyRL tx, the cookbook's loop, atoll's sandbox), and the trainer's pass@k
in the managed interpreter. A random tiny model solves nothing: this proves the plumbing, the
records and the disjointness, not learning."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.tinker_local import RUN_FLAGS, run_atoll

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

PNG = b"\x89PNG\r\n\x1a\n"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _summary_table(text: str) -> dict[str, dict[str, str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| iteration | reward |"))
    headings = [c.strip() for c in lines[start].strip("|").split("|")]
    table = {}
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = dict(zip(headings, cells, strict=True))
    return table


@pytest.mark.long
def test_hidden_training_evaluates_its_held_out_set_every_iteration(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    out = tmp_path / "hidden"
    command = [
        "pi", "train", "hidden", "--base-model", str(tiny_model), *RUN_FLAGS,
        "--iterations", "2", "--eval-every", "1", "--eval-samples", "2", "--batch-seed", "4",
        "--out", str(out),
    ]  # fmt: skip
    done = run_atoll(venv_bin, server_env, *command)
    assert done.returncode == 0, done.stderr

    # Held-out metrics in the row of every evaluated iteration, beside the training ones.
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1]
    for row in rows:
        assert "env/all/reward/total" in row
        assert 0.0 <= row["test/env/all/reward/total"] <= 2.0
        assert 0.0 <= row["test/env/all/pass@1"] <= row["test/env/all/pass@2"] <= 1.0
        # 2 families x 2 languages x 1 instance, each sampled twice; none trained on.
        assert row["test/env/all/total_episodes"] == 8
        assert "test/env/multiples/pass@2" in row and "test/env/javascript/pass@2" in row
        # pass@1 is the held-out solve rate: every hidden case passed.
        assert row["test/env/all/pass@1"] == pytest.approx(row["test/env/all/all_cases"])

    summary = (out / "summary.md").read_text()
    assert "Held-out set: 4 groups from the `eval` namespace" in summary
    table = _summary_table(summary)
    for step, row in zip(("0", "1"), rows, strict=True):
        assert float(table[step]["held-out reward"]) == pytest.approx(
            row["test/env/all/reward/total"], abs=5e-4
        )
        assert float(table[step]["held-out pass@2"]) == pytest.approx(
            row["test/env/all/pass@2"], abs=5e-4
        )
    assert "](reward.png)" in summary
    from matplotlib.image import imread

    assert (out / "reward.png").read_bytes()[:8] == PNG
    assert imread(out / "reward.png").ndim == 3  # decodes as a whole

    # Training and held-out tasks are disjoint, and the records say which is which.
    job = json.loads(json.loads((out / "config.json").read_text())["dataset_builder"]["job_json"])
    trained = [t["id"] for t in job["tasks"]]
    evaluated = [t["id"] for t in job["eval_tasks"]]
    assert not set(trained) & set(evaluated)
    assert all("/train/" in t for t in trained) and all("/eval/" in t for t in evaluated)
    assert job["eval_every"] == 1 and job["eval_group_size"] == 2
    # Each batch of the mixed order holds both families and both languages.
    for batch in (job["tasks"][0:2], job["tasks"][2:4]):
        assert {t["tags"][0] for t in batch} == {"multiples", "recurrence"}
        assert {t["tags"][1] for t in batch} == {"python", "javascript"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["batches"]["seed"] == 4 and manifest["batches"]["order"] == "mixed-v1"
    assert manifest["evaluation"]["samples"] == 2 and manifest["evaluation"]["groups"] == 4
    record = manifest["trained_on"]
    assert {f["split"] for f in record["family_instances"].values()} == {"train"}
    assert {f["split"] for f in record["evaluated_only"]["family_instances"].values()} == {"eval"}

    # The seed is part of the run: a rerun with another is refused, not mixed in.
    other = run_atoll(
        venv_bin, server_env, *command[:-2], "--batch-seed", "5", "--out", str(out), timeout=120
    )
    assert other.returncode == 2 and "batches" in other.stderr


# The trainer's held-out group in the managed interpreter: pass@k from each mode's own
# "solved" metric, aggregated by the cookbook's own metric code.
_PASS_AT_K = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import tinker
from tinker_cookbook.completers import TokensWithLogprobs
from tinker_cookbook.rl.metric_util import compute_trajectory_metrics
from tinker_cookbook.rl.types import Trajectory, TrajectoryGroup, Transition
from train import TaskGroupBuilder

def episode(metrics):
    step = Transition(tinker.ModelInput.empty(), TokensWithLogprobs([1], [0.0]), 0.0, True, metrics)
    return Trajectory([step], tinker.ModelInput.empty())

out = {}
for mode, key in (("hidden", "all_cases"), ("shell", "conjunction"), ("answer", "correct")):
    for phase in ("train", "eval"):
        groups = []
        for solved in ([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]):
            builder = TaskGroupBuilder({"mode": mode, "phase": phase}, {"id": "t", "tags": []}, None, None)
            trajectories = [episode({key: s}) for s in solved]
            pairs = asyncio.run(builder.compute_group_rewards(trajectories, []))
            assert all(reward == 0.0 for reward, _ in pairs)
            groups.append(TrajectoryGroup(trajectories, [r for r, _ in pairs], [m for _, m in pairs]))
        metrics = compute_trajectory_metrics(groups, [["a"], ["b"]])
        out[f"{mode}/{phase}"] = {k: v for k, v in metrics.items() if k.startswith("env/all/pass@")}
print(json.dumps(out))
"""


def test_the_trainer_reports_pass_at_k_for_held_out_groups_only() -> None:
    from support import ci

    from atoll.pi_train import env as managed_env

    managed = managed_env.installed()
    ci.need(
        managed is not None,
        "the managed trainer environment is not built here",
        "CI builds it (the tiny_model fixture) before the pi-train tests",
    )
    assert managed is not None
    done = subprocess.run(
        [str(managed.python), "-c", _PASS_AT_K, str(managed_env.managed_script("train").parent)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    # One task solved once in 4 samples, one never: pass@1 = (1/4 + 0) / 2, pass@2 = (1/2 + 0)
    # / 2, pass@4 = (1 + 0) / 2, whichever metric the mode counts as solved.
    expected = {"env/all/pass@1": 0.125, "env/all/pass@2": 0.25, "env/all/pass@4": 0.5}
    for mode in ("hidden", "shell", "answer"):
        assert found[f"{mode}/eval"] == pytest.approx(expected)
        assert found[f"{mode}/train"] == {}
