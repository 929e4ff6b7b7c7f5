"""`atoll run --agent oracle --task polyomino_packing` end to end, on atoll-local
and on Harbor's docker environment, with the embedded judge.

`atoll run` adds the task's `frontiercs-judge` job plugin, which starts the
judge for the job; the oracle installs the seed; the task's verifier, with no
network, re-scores it through the judge's socket, so the trial's reward must
be exactly the seed's recorded score.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from polyomino_support import run_env
from support.engine import docker_engine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _atoll_run(
    venv_bin: Path, env_name: str, jobs: Path, *extra: str, exit_code: int = 0, **env: str
) -> dict[str, Any]:
    environ = run_env(**env)
    environ.pop("FRONTIERCS_JUDGE_URL", None)  # the job's own judge, unless a test names one
    done = subprocess.run(
        [
            str(venv_bin / "atoll"),
            "run",
            "--agent",
            "oracle",
            "--task",
            "polyomino_packing",
            "--env",
            env_name,
            "-o",
            str(jobs),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=540,
        cwd=jobs,
        env=environ,
    )
    assert done.returncode == exit_code, done.stdout[-3000:] + done.stderr[-3000:]
    assert "frontiercs-judge" in done.stderr or "--no-default-plugins" in extra
    (trial_result,) = jobs.glob("*/polyomino_packing__*/result.json")
    return json.loads(trial_result.read_text())


def _assert_seed_score(trial: dict[str, Any], recorded: dict[str, Any]) -> None:
    assert trial["exception_info"] is None, trial["exception_info"]
    assert trial["verifier_result"]["rewards"] == {
        "reward": recorded["score"],
        "raw_score": recorded["raw_score"],
    }


# The oracle on atoll-local with the job's own judge, and with a judge named by
# FRONTIERCS_JUDGE_URL (reached through a relayed socket), are each one whole job
# of tests/judge/test_judge_job_plugin.py, which also checks the judge's lifetime.


def test_no_judge_behind_the_socket_fails_the_trial_without_a_reward(
    venv_bin: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "no-judge"
    empty.mkdir()
    trial = _atoll_run(
        venv_bin,
        "atoll-local",
        tmp_path,
        "--no-default-plugins",
        exit_code=1,  # a trial without a reward is a failed trial
        FRONTIERCS_JUDGE_SOCKET_DIR=str(empty),
    )
    assert trial["verifier_result"] is None
    assert trial["exception_info"]["exception_type"] == "RewardFileNotFoundError"
    (stdout,) = tmp_path.glob("*/polyomino_packing__*/verifier/test-stdout.txt")
    assert "no judge socket at /run/frontiercs-judge/judge.sock" in stdout.read_text()


@pytest.mark.docker
def test_oracle_on_docker_gets_the_seed_score(
    venv_bin: Path, tmp_path: Path, recorded: dict[str, Any]
) -> None:
    host = docker_engine()
    trial = _atoll_run(venv_bin, "docker", tmp_path, DOCKER_HOST=host)
    _assert_seed_score(trial, recorded)
