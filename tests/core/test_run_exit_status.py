"""`atoll run` exits non-zero, with one line, when a trial of its job failed; Harbor's own does not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from atoll.core.job_outcome import jobs_dir

pytestmark = pytest.mark.timeout(300)

HERE = Path(__file__).parent
TASK = HERE / "environments" / "tasks" / "write-a-file"


def _run(venv_bin: Path, tool: str, tmp_path: Path, agent: str) -> subprocess.CompletedProcess[str]:
    jobs, roots = tmp_path / "jobs", tmp_path / "roots"
    jobs.mkdir(exist_ok=True)
    roots.mkdir(exist_ok=True)
    env_name = (
        "atoll-local" if tool == "atoll" else "atoll.core.environments.local:LocalEnvironment"
    )
    argv = [str(venv_bin / tool), "run", "-p", str(TASK), "--agent", agent, "--env", env_name,
            "-o", str(jobs)]  # fmt: skip
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={
            "PATH": f"{venv_bin}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TERM": "dumb",
            "PYTHONPATH": str(HERE),
            "ATOLL_LOCAL_ROOT": str(roots),
            "HARBOR_TELEMETRY": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        },
    )


@pytest.mark.slow
def test_a_failed_agent_makes_atoll_run_exit_non_zero_with_one_line(venv_bin, tmp_path):
    done = _run(venv_bin, "atoll", tmp_path, "failing_agent:FailingAgent")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (result,) = (tmp_path / "jobs").glob("*/result.json")
    (trial,) = [p.name for p in result.parent.iterdir() if (p / "result.json").is_file()]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: 1 trial of job {Path('jobs') / result.parent.name} failed: "
        f"{trial} (SettingRefused)"
    ] or errors == [f"error: 1 trial of job {result.parent} failed: {trial} (SettingRefused)"]
    stats = json.loads(result.read_text())["stats"]
    assert any(s["exception_stats"] for s in stats["evals"].values())


@pytest.mark.slow
def test_harbors_own_run_is_left_as_it_is(venv_bin, tmp_path):
    done = _run(venv_bin, "harbor", tmp_path, "failing_agent:FailingAgent")
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_a_job_whose_trials_all_succeed_exits_zero(venv_bin, tmp_path):
    done = _run(venv_bin, "atoll", tmp_path, "oracle")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error:" not in done.stderr


def test_the_jobs_directory_is_found_as_harbor_finds_it(tmp_path):
    config = tmp_path / "job.yaml"
    config.write_text("jobs_dir: from-config\n")
    assert jobs_dir(["run", "-o", "out"]) == Path("out")
    assert jobs_dir(["run", "--jobs-dir=out2", "-c", str(config)]) == Path("out2")
    assert jobs_dir(["run", "-c", str(config)]) == Path("from-config")
    assert jobs_dir(["run", "-c", str(tmp_path / "absent.yaml")]) == Path("jobs")
    assert jobs_dir(["run", "--agent", "oracle"]) == Path("jobs")
    assert jobs_dir(["run", "-oout3"]) == Path("out3")  # click's attached short value
    assert jobs_dir(["run", "--", "-o", "not-an-option"]) == Path("jobs")
