"""`harbor run` of a test task with Harbor's own docker environment, against the private engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def harbor_run_docker(
    task: Path, jobs: Path, docker_host: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the oracle on `task` with `--env docker`, results under `jobs`."""
    harbor = Path(sys.executable).parent / "harbor"
    return subprocess.run(
        [str(harbor), "run", "-p", str(task), "--agent", "oracle", "--env", "docker"]
        + ["-o", str(jobs), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=jobs,
        env={
            **os.environ,
            "DOCKER_HOST": docker_host,
            "TERM": "dumb",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network: use the bundled cost map
            **env,
        },
    )


def only_eval(jobs: Path) -> dict[str, Any]:
    """The job's one evaluation summary (errors, reward counts)."""
    (result_path,) = jobs.glob("*/result.json")
    (evals,) = json.loads(result_path.read_text())["stats"]["evals"].values()
    return evals
