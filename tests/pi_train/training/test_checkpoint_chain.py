"""Training runs chain: answer RL starts from the bootstrap's saved training state.

One bootstrap step on the session's tiny model and local server
(tests/pi_train/conftest.py), then one answer iteration with
`--load-checkpoint` naming that run's final state, and a second one resumed
from the answer run's own state; the shapes are the ones every pi-train
module shares, so nothing new is compiled.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.tinker_local import RUN_FLAGS, run_atoll

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_answer_training_starts_from_the_bootstrap_state_and_keeps_it_as_a_setting(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    corpus, boot = tmp_path / "corpus", tmp_path / "bootstrap"
    built = run_atoll(venv_bin, {}, "pi", "bootstrap", "build", str(corpus), "--conversations", "5")
    assert built.returncode == 0, built.stderr
    trained = run_atoll(
        venv_bin, server_env, "pi", "bootstrap", "train", str(corpus),
        "--base-model", str(tiny_model), "--batch-size", "2", "--max-length", "3072",
        "--steps", "1", "--out", str(boot),
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    final = _rows(boot / "checkpoints.jsonl")[-1]
    assert final["name"] == "final"
    state = final["state_path"]
    boot_manifest = json.loads((boot / "manifest.json").read_text())
    assert boot_manifest["trained_on"]["euler_problems"] == []
    assert boot_manifest["started_from"] is None

    store = tmp_path / "store"
    made = run_atoll(venv_bin, server_env, "euler", "import", "--sample", "--store", str(store))
    assert made.returncode == 0, made.stderr
    out = tmp_path / "answer"

    def answer(checkpoint: str, iterations: int = 1) -> subprocess.CompletedProcess[str]:
        return run_atoll(
            venv_bin, server_env, "pi", "train", "answer", "--base-model", str(tiny_model),
            *RUN_FLAGS, "--languages", "python", "--iterations", str(iterations),
            "--store", str(store), "--out", str(out), "--load-checkpoint", checkpoint,
        )  # fmt: skip

    done = answer(state)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["load_checkpoint"] == state
    # Named by its bare state path, the start cannot be traced; the run's own problems can.
    assert manifest["trained_on"]["euler_problems"] == [1]
    assert manifest["started_from"]["state"] == state and manifest["started_from"]["unrecorded"]
    log = (out / "logs.log").read_text()
    assert f"Loaded weights from {state}" in log and "Resumed training" not in log
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0]
    assert f"Started from the training state `{state}`" in (out / "summary.md").read_text()

    # The bootstrap's run directory names the same state; another state is another run.
    same = answer(str(boot))
    assert same.returncode == 0 and "done already" in same.stderr, same.stderr
    # Named by its directory, it is traced: the bootstrap's record is copied in.
    lineage = json.loads((out / "manifest.json").read_text())["started_from"]
    assert lineage["run_dir"] == str(boot.resolve()) and "unrecorded" not in lineage
    assert lineage["command"] == "atoll pi bootstrap train"
    assert lineage["trained_on"] == boot_manifest["trained_on"]
    other_state = state.rsplit("/", 1)[0] + "/another"
    other = answer(other_state)
    assert other.returncode == 2
    errors = [line for line in other.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "load_checkpoint" in errors[0], other.stderr
    assert json.loads((out / "manifest.json").read_text())["config"]["load_checkpoint"] == state

    # A resume continues from the run's own last state, not from the state it was started from.
    own = _rows(out / "checkpoints.jsonl")[-1]["state_path"]
    assert own != state
    more = answer(state, iterations=2)
    assert more.returncode == 0, more.stderr
    log = (out / "logs.log").read_text()
    assert f"Resumed training from {own}" in log and log.count("Loaded weights from") == 1
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0, 1]
    # The longer run records its longer task list and keeps the traced start.
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trained_on"]["euler_problems"] == [1, 2]
    assert manifest["started_from"] == lineage
