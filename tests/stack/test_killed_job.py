"""A job SIGKILLed mid-run leaves its Reef behind; the next job of the run stops it.

Real `harbor run` with the reef-stack plugin and the real `reef serve`: the
first job is killed with SIGKILL while its agent works (no clean-up runs,
Reef lives on in its own session, its resolved configuration with the token
on disk); the next job with the same run config adopts that Reef (or, when
it was given a different token, replaces it), and at its end nothing is left
running and no file under either job holds the token.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from support.ports import free_port
from test_job_plugin import _harbor_argv, _harbor_env, _reward_and_receipt, _settles

from atoll.stack import health

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def _kill_mid_run(venv_bin, tmp_path, env, port, upstream) -> None:
    argv, jobs = _harbor_argv(
        venv_bin, tmp_path, "--pk", f"upstream_url={upstream.base_url}", "--pk", f"port={port}",
        "--ak", "linger_s=120",
    )  # fmt: skip
    harbor = subprocess.Popen(
        argv, cwd=tmp_path, env=_harbor_env(env, tmp_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not list(jobs.glob("*/*/agent/receipt.json")):
            assert harbor.poll() is None and time.monotonic() < deadline, "the job did not start"
            time.sleep(0.1)
    finally:
        harbor.kill()  # SIGKILL: no plugin hook, no atexit
        harbor.wait(timeout=30)


@pytest.mark.parametrize("token", ["exported", "made-per-job"])
def test_the_next_job_stops_the_reef_a_killed_job_left(
    venv_bin, tmp_path, upstream, stack_env, mark, token
):
    port = free_port()
    env = dict(stack_env)
    if token == "made-per-job":
        env.pop("REEF_TOKEN")  # each job's plugin makes its own
    _kill_mid_run(venv_bin, tmp_path, env, port, upstream)
    assert health.is_reef(f"http://127.0.0.1:{port}"), "the killed job's Reef is not running"
    first_token = _token_on_disk(tmp_path)
    assert first_token  # Reef's resolved configuration, left behind by the kill

    argv, jobs = _harbor_argv(
        venv_bin, tmp_path, "--pk", f"upstream_url={upstream.base_url}", "--pk", f"port={port}"
    )
    killed_job = set(jobs.iterdir())
    time.sleep(1.1)  # job directories are named by the second they start
    done = subprocess.run(
        argv, cwd=tmp_path, env=_harbor_env(env, tmp_path), capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finished = [p.parent for p in jobs.glob("*/result.json") if p.parent not in killed_job]
    assert len(finished) == 1
    rewards, receipt = _reward_and_receipt(finished[0])
    assert rewards == ["1.0"] and len(receipt["receipt"]) == 32

    assert _settles(mark), "a Reef process outlived the job that adopted it"
    assert not health.healthy(f"http://127.0.0.1:{port}")
    assert _token_on_disk(tmp_path) == []


def _token_on_disk(root) -> list:
    """Reef's resolved configuration files under `root` that hold a bearer token."""
    found = []
    for runtime in root.rglob("runtime.yaml"):
        if re.search(r"^\s*token:\s*['\"]?[\w-]{8,}", runtime.read_text(), re.MULTILINE):
            found.append(runtime)
    return found
