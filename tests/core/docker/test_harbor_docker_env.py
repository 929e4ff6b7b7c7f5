"""Harbor's own `docker` environment, unchanged, against the private engine.

The task's image builds `FROM atoll/base:bookworm` offline, so a whole Harbor
trial (image build, oracle agent, verifier) runs here without any registry.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harbor_cli import harbor_run_docker, only_eval

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(300)]

TASK = Path(__file__).parent / "tasks" / "compile-and-run"


def test_oracle_gets_full_reward_in_harbors_docker_environment(docker_host, tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    done = harbor_run_docker(TASK, jobs, docker_host)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    evals = only_eval(jobs)
    assert evals["n_errors"] == 0, done.stdout[-3000:]
    assert list(evals["reward_stats"]["reward"]) == ["1.0"]
