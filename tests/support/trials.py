"""Harbor trials run the way a user runs them (`atoll run`), for end-to-end tests.

`atoll_run` starts the real `atoll` command with Harbor's agents (oracle, nop)
on a task by short name or path and returns the one trial's directory, so a
test can read the verifier's own files (reward.json, scores.json, ...).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def atoll_run(
    jobs: Path,
    *,
    agent: str,
    env: str,
    task: str | None = None,
    path: Path | None = None,
    docker_host: str | None = None,
    timeout: float = 420,
) -> Path:
    """Run one trial and return its directory (the job must have finished without errors)."""
    atoll = Path(sys.executable).parent / "atoll"
    jobs.mkdir(parents=True, exist_ok=True)
    where = ["--task", task] if task is not None else ["-p", str(path)]
    done = subprocess.run(
        [str(atoll), "run", *where, "--agent", agent, "--env", env, "-o", str(jobs), "-y"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=jobs,
        env={
            **os.environ,
            "TERM": "dumb",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network: the bundled cost map
            **({"DOCKER_HOST": docker_host} if docker_host else {}),
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result,) = jobs.glob("*/result.json")
    (evals,) = json.loads(result.read_text())["stats"]["evals"].values()
    (trial,) = (p for p in result.parent.iterdir() if p.is_dir())
    assert evals["n_errors"] == 0, (trial / "exception.txt").read_text()[-3000:]
    return trial


def verifier_json(trial: Path, name: str) -> Any:
    return json.loads((trial / "verifier" / name).read_text())
