"""One update of each training command moves its policy the way the advantages say.

`atoll pi train answer`, `hidden` and `shell` share one update path: the
managed trainer (managed/train.py) runs tinker-cookbook's RL loop, whose
group rollouts become datums in `assemble_training_data` with the group-
centred advantages of `compute_advantages`, trained with the loss and
optimizer of train.py's `config(job)` (importance sampling, Adam). What
differs per command is what feeds it: the job (tasks, system prompt,
extras), the Envs of its mode (answer: one turn; hidden: a submission and a
repair turn; shell: Pi's tool calls relayed to the workspace) and the
scoring service. So one test, parametrised over the three commands, each
with its own job (support/pi_train_jobs.py: the command's task list, routes
and `run.trainer_job`) and the trainer's own code on the local Tinker
server (support/pi_train_update.py).

The rollouts are scored by the command's service; their rewards are then
set (a random tiny model's own rewards are flat), so the advantages are
known. On one LoRA per command: all-equal rewards first (the policy must not
move at all), then distinct rewards in each group, after which Σ A_i·Δ_i > 0,
where Δ_i is the change of trajectory i's summed completion logprob (every
action token of every turn) under the new sampler.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.pi_train_jobs import COMMANDS, command_job
from support.pi_train_settings import train_settings
from support.tinker_local import MAX_TOKENS, run_atoll

from atoll.pi_train import env as managed_env
from atoll.pi_train.training.run import trainer_environment

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(1800)]

SUPPORT = Path(__file__).resolve().parents[2] / "support"
# Four trajectories in each group: more samples than the other tests' groups of two, so the
# sum over them is not one pair's; the shapes compiled (tokens per turn) are theirs. Two
# groups, so that advantages are centred per group, except for shell, whose multi-turn
# rollouts cost minutes a group on two cores: one group of four shows the same there.
GROUP_SIZE = 4
GROUPS = {"answer": 2, "hidden": 2, "shell": 1}
LEARNING_RATE = 1e-3


def _measure(
    mode: str, server_env: dict[str, str], tiny_model: Path, tmp_path: Path, store: Path | None
) -> dict[str, Any]:
    settings = train_settings(
        base_model=str(tiny_model),
        base_url=server_env["TINKER_BASE_URL"],
        groups_per_batch=GROUPS[mode],
        group_size=GROUP_SIZE,
        max_tokens=int(MAX_TOKENS),
        learning_rate=LEARNING_RATE,
    )
    managed = managed_env.ensure(lambda line: None)
    with command_job(mode, settings, tmp_path / "run", store) as (job, token):
        env = {
            **trainer_environment(str(tiny_model), server_env["TINKER_API_KEY"]),
            "ATOLL_SCORER_TOKEN": token,
            "PYTHONFAULTHANDLER": "1",  # a crash says where, in every thread, in the error
        }
        request = {"job": job, "managed": str(managed_env.managed_script("train").parent)}
        done = subprocess.run(
            [str(managed.python), str(SUPPORT / "pi_train_update.py")],
            input=json.dumps(request),
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
    assert done.returncode == 0, f"{done.stdout[-1500:]}\n{done.stderr[-4000:]}"
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def euler_store(
    tmp_path_factory: pytest.TempPathFactory, venv_bin: Path, server_env: dict[str, str]
) -> Path:
    store = tmp_path_factory.mktemp("euler") / "store"
    made = run_atoll(venv_bin, server_env, "euler", "import", "--sample", "--store", str(store))
    assert made.returncode == 0, made.stderr
    return store


@pytest.mark.parametrize("mode", COMMANDS)
def test_one_update_moves_the_policy_along_the_advantages(
    mode: str,
    server_env: dict[str, str],
    tiny_model: Path,
    euler_store: Path,
    tmp_path: Path,
) -> None:
    found = _measure(mode, server_env, tiny_model, tmp_path, euler_store)
    rows = found["trajectories"]
    assert found["mode"] == mode and found["loss_fn"] == "importance_sampling"
    assert len(rows) == GROUPS[mode] * GROUP_SIZE and found["datums"] >= len(rows)
    for row in rows:
        # The sums are the sampled tokens' logprobs, recomputed: the datums hold what was sampled.
        assert row["before"] == pytest.approx(row["sampled"], abs=1e-3)
        assert row["tokens"] > 0 and row["datums"] >= 1

    # All-equal rewards: every advantage is 0 and the step changes nothing at all.
    assert all(row["equal_advantage"] == 0.0 for row in rows)
    assert [row["after_equal"] for row in rows] == [row["before"] for row in rows]

    # Distinct rewards: the policy moves toward the better trajectories of each group.
    advantages = [row["advantage"] for row in rows]
    deltas = [row["after"] - row["after_equal"] for row in rows]
    assert sorted(advantages) == sorted([-1.5, -0.5, 0.5, 1.5] * GROUPS[mode])
    assert sum(a * d for a, d in zip(advantages, deltas, strict=True)) > 0
    up = [d for a, d in zip(advantages, deltas, strict=True) if a > 0]
    down = [d for a, d in zip(advantages, deltas, strict=True) if a < 0]
    assert sum(up) / len(up) > sum(down) / len(down)
    if mode == "hidden":
        # No random submission passes every case: every trajectory took its repair turn, and
        # the measured sum (and the update) covers the tokens of both turns.
        assert all(row["turns"] == 2 and row["tokens"] > int(MAX_TOKENS) for row in rows)
