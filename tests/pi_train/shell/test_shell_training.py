"""`atoll pi train shell` for real: the tiny model on the tests' shared local Tinker, the real sandbox.

The `atoll` command drives SkyRL tx through tinker-cookbook's RL loop; every
trajectory's workspace lives in the command's process and its programs run
in atoll's sandbox. A random tiny model's reward stays flat: this proves the
plumbing, the bounds, the per-trajectory log and resuming, not learning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.tinker_local import RUN_FLAGS, run_atoll

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(1800)]

SHELL_FLAGS = [
    *RUN_FLAGS, "--max-steps", "2", "--max-tool-calls", "3", "--eval-instances", "1", "--eval-every", "2",
]  # fmt: skip
PARTS = ("mutation", "execution", "exact_output", "answer", "conjunction")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_shell_training_runs_two_iterations_logs_each_trajectory_and_resumes(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shell"
    base = ["pi", "train", "shell", "--base-model", str(tiny_model), *SHELL_FLAGS]
    first = run_atoll(venv_bin, server_env, *base, "--iterations", "1", "--out", str(out))
    assert first.returncode == 0, first.stderr
    # Julia is asked for by default; the sandbox here lacks it, and the run says so.
    assert "julia: left out of the schedule" in first.stderr
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0]

    second = run_atoll(venv_bin, server_env, *base, "--iterations", "2", "--out", str(out))
    assert second.returncode == 0, second.stderr
    metrics = _rows(out / "metrics.jsonl")
    train_rows = [r for r in metrics if "env/all/reward/total" in r]
    assert [r["step"] for r in train_rows] == [0, 1]
    for row in train_rows:
        for part in PARTS:
            assert 0.0 <= row[f"env/all/{part}"] <= 1.0
        assert row["env/all/turns"] >= 1
    # The held-out evaluation ran at iteration 0 (--eval-every 2), before its update; not at 1.
    assert 0.0 <= train_rows[0]["test/env/all/conjunction"] <= 1.0
    assert "test/env/all/conjunction" not in train_rows[1]
    # One sample per held-out task: pass@1, the held-out conjunction rate.
    assert train_rows[0]["test/env/all/pass@1"] == train_rows[0]["test/env/all/conjunction"]

    trajectories = _rows(out / "trajectories.jsonl")
    train = [t for t in trajectories if t["phase"] == "train"]
    held_out = [t for t in trajectories if t["phase"] == "eval"]
    # 2 iterations x 2 groups x 2 rollouts, each logged once (the resume repeated none).
    assert sorted(t["iteration"] for t in train) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert all("/train/" in t["task"] for t in train)
    for row in trajectories:
        assert set(PARTS) <= set(row) and row["end"] in (
            "answered",
            "steps",
            "tool_calls",
            "tokens",
        )
        assert 1 <= row["turns"] <= 2 and row["tool_calls"] <= 3
        expected = (
            0.0
            if row["disqualified"]
            else row["conjunction"] + 0.1 * sum(row[p] for p in PARTS[:4])
        )
        assert row["reward"] == pytest.approx(expected)
    # Evaluation is balanced: every family in each trained language, from the eval namespace.
    cells = {(t["family"], t["language"]) for t in held_out}
    assert {lang for _, lang in cells} == {"python", "javascript"} and len(cells) == 8
    assert [t["iteration"] for t in held_out] == [0] * 8
    assert all("/eval/" in t["task"] for t in held_out)

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["bounds"]["steps_per_episode"] == 2
    assert manifest["bounds"]["tool_calls_per_episode"] == 3
    assert manifest["bounds"]["tokens_per_turn"] == 16
    assert manifest["bounds"]["tokens_per_episode"] == 4096
    assert manifest["languages"]["trained"] == ["python", "javascript"]
    assert "julia" in manifest["languages"]["left_out"]
    assert manifest["tools"] == ["read", "write", "edit", "bash"]
    assert manifest["transfer_suite"]["name"] == "atoll-transfer-v1"
    summary = (out / "summary.md").read_text()
    assert "| conjunction |" in summary and "](reward.png)" in summary
    assert "Held-out set: 8 groups from the `eval` namespace" in summary
    assert "| held-out reward | held-out pass@1 |" in summary
    assert manifest["batches"]["languages"] == ["python", "javascript"]
    assert max(c["batch"] for c in _rows(out / "checkpoints.jsonl")) == 2

    # Other bounds in the same directory are refused, not mixed into the run.
    other = run_atoll(
        venv_bin, server_env, *base, "--iterations", "3", "--max-steps", "3", "--out", str(out),
        timeout=120,
    )  # fmt: skip
    assert other.returncode == 2 and "bounds" in other.stderr
