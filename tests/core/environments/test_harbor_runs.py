"""`harbor run` and `atoll run` with Harbor's oracle agent on atoll-local, end to end."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TASK = Path(__file__).parent / "tasks" / "write-a-file"


def _run(venv_bin: Path, tool: str, env_name: str, jobs: Path, roots: Path) -> dict:
    done = subprocess.run(
        [
            str(venv_bin / tool),
            "run",
            "-p",
            str(TASK),
            "--agent",
            "oracle",
            "--env",
            env_name,
            "-o",
            str(jobs),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=jobs,
        env={
            "PATH": f"{venv_bin}:/usr/bin:/bin",
            "HOME": str(jobs),
            "TERM": "dumb",
            "ATOLL_LOCAL_ROOT": str(roots),
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result_path,) = jobs.glob("*/result.json")
    return {"job": json.loads(result_path.read_text()), "output": done.stdout + done.stderr}


def _rewards(job: dict) -> dict:
    (evals,) = job["stats"]["evals"].values()
    return {"errors": evals["n_errors"], "rewards": evals["reward_stats"]["reward"]}


@pytest.mark.parametrize(
    ("tool", "env_name"),
    [
        ("harbor", "atoll.core.environments.local:LocalEnvironment"),
        ("atoll", "atoll-local"),
    ],
)
def test_oracle_gets_full_reward(venv_bin, tmp_path, tool, env_name):
    roots = tmp_path / "roots"
    roots.mkdir()
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    outcome = _run(venv_bin, tool, env_name, jobs, roots)
    summary = _rewards(outcome["job"])
    assert summary["errors"] == 0
    assert list(summary["rewards"]) == ["1.0"]
    assert "RUN) are not built: use --env docker" in outcome["output"]
    assert list(roots.iterdir()) == []  # the trial's root is gone after the run
