"""A Reef that REEF_URL names is the job's: used without a start and left running; a dead one is an error.

This is how `atoll run` behaves when the user already runs Reef: the
`reef-stack` plugin it adds by default must not start a second one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from stack_support import marked_processes
from support.ports import free_port
from support.reef_server import ReefServer

from atoll.stack import health

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HERE = Path(__file__).parent
TASK = HERE / "tasks" / "reef-receipt"
LOCAL_ENV = "atoll.core.environments.local:LocalEnvironment"


def harbor_run(venv_bin: Path, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    for name in ("jobs", "roots", "home"):
        (tmp_path / name).mkdir(exist_ok=True)
    env = {**env, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(HERE),
           "ATOLL_LOCAL_ROOT": str(tmp_path / "roots"), "HARBOR_TELEMETRY": "0"}  # fmt: skip
    argv = [str(venv_bin / "harbor"), "run", "-p", str(TASK), "--agent",
            "reef_probe_agent:ReefProbeAgent", "--env", LOCAL_ENV, "-o", str(tmp_path / "jobs"),
            "--plugin", "reef-stack"]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env, check=False)


def test_a_named_reef_is_used_and_left_running(venv_bin, tmp_path, upstream, stack_env, mark):
    reef = ReefServer(upstream, tmp_path / "reef").start()
    try:
        env = {**stack_env, "REEF_URL": reef.url, "REEF_TOKEN": reef.token}
        done = harbor_run(venv_bin, env, tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"reef-stack: using the Reef at {reef.url} (REEF_URL; left running)" in done.stderr
        (job_dir,) = [p.parent for p in (tmp_path / "jobs").glob("*/result.json")]
        assert not (job_dir / "reef-stack").exists()  # nothing was planned or started
        assert reef.records("reef-stack-test")  # the probe agent spoke to this Reef
        assert health.is_reef(reef.url)
    finally:
        reef.stop()
    assert marked_processes(mark) == []


def test_a_named_reef_that_does_not_answer_is_one_error_line(venv_bin, tmp_path, stack_env, mark):
    url = f"http://127.0.0.1:{free_port()}"
    done = harbor_run(venv_bin, {**stack_env, "REEF_URL": url}, tmp_path)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    (line,) = [line for line in output.splitlines() if "reef-stack: error:" in line]
    assert line == (
        f"reef-stack: error: REEF_URL={url} does not answer as Reef (GET /healthz); "
        "start that Reef, or unset REEF_URL to start one for the job"
    )
    assert marked_processes(mark) == []
