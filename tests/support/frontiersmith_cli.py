"""Running `atoll emit frontiersmith` and Harbor's oracle and no-op on what it emits, as a user would.

Test modules import these from here, not from a conftest: which `conftest`
module Python finds depends on which test folders a run collects.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from atoll.core.user_dirs import STATE_ENV


def emit_env(home: Path) -> dict[str, str]:
    """The command's environment: a test key, no host state, a narrow terminal."""
    inherited = {name: value for name, value in os.environ.items() if name != STATE_ENV}
    return {
        **inherited,
        "OPENAI_API_KEY": "sk-test-key-never-written",
        "XDG_STATE_HOME": str(home / "state"),
        "COLUMNS": "160",
        "TERM": "dumb",
    }


def emit(
    venv_bin: Path, home: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), "emit", "frontiersmith", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=emit_env(home),
        cwd=home,
    )


def oracle_and_nop(venv_bin: Path, home: Path, tasks: list[Path]) -> dict[tuple[str, str], float]:
    """One `atoll run` job (one start-up): Harbor's oracle and no-op agent on every task, on
    atoll-local; the reward of each (task name, agent). Every trial must end without an error."""
    jobs = home / "jobs"
    jobs.mkdir()
    job = {
        "jobs_dir": str(jobs),
        "n_concurrent_trials": 2,
        "agents": [{"name": "oracle"}, {"name": "nop"}],
        "tasks": [{"path": str(path)} for path in tasks],
        "environment": {"import_path": "atoll.core.environments.local:LocalEnvironment"},
    }
    (home / "job.json").write_text(json.dumps(job))
    done = subprocess.run(
        [str(venv_bin / "atoll"), "run", "-c", str(home / "job.json")],
        capture_output=True, text=True, timeout=600, cwd=home,
        env={**emit_env(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rewards: dict[tuple[str, str], float] = {}
    for path in jobs.glob("*/*/result.json"):
        trial = json.loads(path.read_text())
        assert trial["exception_info"] is None, trial["exception_info"]
        key = (Path(trial["task_id"]["path"]).name, trial["agent_info"]["name"])
        rewards[key] = trial["verifier_result"]["rewards"]["reward"]
    return rewards
