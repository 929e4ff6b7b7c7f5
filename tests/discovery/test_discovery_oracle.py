"""Harbor's oracle on the five discovery tasks, as one job each on atoll-local and on Docker.

The oracle installs each task's seed; the task's own verifier, with no network,
runs it in its sandbox and recomputes the objective, so each trial's rewards
must be the seed's score as task.toml records it and the reward the problem's
formula gives for it. The five tasks run as one Harbor dataset (one job): on
Docker their five identical Dockerfiles build one image layer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.engine import docker_engine

from atoll.discovery import TASKS, evaluate, task_dir, task_facts

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SEED_OUTPUTS = {  # what each seed prints, rebuilt here to compute its reward apart from it
    "erdos_min_overlap": {"h": [0.5] * 200},
    "autocorrelation_ac1": {"heights": [1.0] * 100},
    "autocorrelation_ac2": {"heights": [1.0] * 100},
    "circle_packing_26": None,
    "circle_packing_32": None,
}


def _expected_reward(name: str) -> float:
    problem = json.loads((task_dir(name) / "tests" / "problem.json").read_text())
    output = SEED_OUTPUTS[name]
    if output is None:  # a packing's reward is its sum of radii
        return task_facts(task_dir(name)).seed_score or 0.0
    return evaluate(problem, output).reward


def _oracle_job(venv_bin: Path, tmp_path: Path, env_name: str, **env: str) -> dict[str, dict]:
    """`atoll run -p DATASET --agent oracle` over copies of the five tasks; rewards by task."""
    dataset = tmp_path / "dataset"
    for name in TASKS:
        shutil.copytree(task_dir(name), dataset / name)
    jobs, roots = tmp_path / "jobs", tmp_path / "roots"
    jobs.mkdir()
    roots.mkdir()
    done = subprocess.run(
        [str(venv_bin / "atoll"), "run", "-y", "-p", str(dataset), "--agent", "oracle"]
        + ["--env", env_name, "-n", str(len(TASKS)), "-o", str(jobs)],
        capture_output=True,
        text=True,
        timeout=840,
        cwd=tmp_path,
        env={
            **os.environ,
            "ATOLL_LOCAL_ROOT": str(roots),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TERM": "dumb",
            **env,
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trials = {}
    for result_file in jobs.glob("*/*/result.json"):
        trial = json.loads(result_file.read_text())
        assert trial["exception_info"] is None, trial["exception_info"]
        trials[trial["task_name"].removeprefix("atoll/")] = trial["verifier_result"]["rewards"]
    return trials


def _assert_seed_scores(trials: dict[str, dict]) -> None:
    assert set(trials) == set(TASKS)
    for name in TASKS:
        rewards = trials[name]
        assert set(rewards) == {"reward", "raw_score"}
        assert rewards["raw_score"] == task_facts(task_dir(name)).seed_score, name
        assert rewards["reward"] == pytest.approx(_expected_reward(name), rel=1e-12), name


def test_the_oracle_scores_every_seed_on_atoll_local(venv_bin, tmp_path):
    _assert_seed_scores(_oracle_job(venv_bin, tmp_path, "atoll-local"))


@pytest.mark.docker
def test_the_oracle_scores_every_seed_on_docker(venv_bin, tmp_path):
    host = docker_engine()
    _assert_seed_scores(_oracle_job(venv_bin, tmp_path, "docker", DOCKER_HOST=host))
