"""Harbor's own `docker` environment, unchanged, against the private engine.

The task's image builds `FROM atoll/base:bookworm` offline, so a whole Harbor
trial (image build, oracle agent, verifier) runs here without any registry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(300)]

TASK = Path(__file__).parent / "tasks" / "compile-and-run"


def test_oracle_gets_full_reward_in_harbors_docker_environment(docker_host, tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    harbor = Path(sys.executable).parent / "harbor"
    done = subprocess.run(
        [str(harbor), "run", "-p", str(TASK), "--agent", "oracle", "--env", "docker"]
        + ["-o", str(jobs)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=jobs,
        env={
            **os.environ,
            "DOCKER_HOST": docker_host,
            "TERM": "dumb",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network: use the bundled cost map
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result_path,) = jobs.glob("*/result.json")
    job = json.loads(result_path.read_text())
    (evals,) = job["stats"]["evals"].values()
    assert evals["n_errors"] == 0, done.stdout[-3000:]
    assert list(evals["reward_stats"]["reward"]) == ["1.0"]
