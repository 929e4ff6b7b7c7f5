"""A killed job's Reef when nobody runs the job again: listed, warned about, stopped from anywhere.

Real `harbor run` with the reef-stack plugin and the real `reef serve`: while
the job runs, its Reef is no orphan, and every file that holds the token is
the owner's alone. Then the job is SIGKILLed (no plugin hook, no atexit:
Reef lives on in its own session with its token on disk). `atoll stack
status` lists it and `atoll doctor` warns about it from any directory;
`atoll stack down --orphans` stops it, and no process of it and no file
holding its token is left.
"""

from __future__ import annotations

import json
import stat
import subprocess
import time
from pathlib import Path

import pytest
from stack_support import atoll
from support.ports import free_port
from test_job_plugin import _harbor_argv, _harbor_env, _settles

from atoll.stack import health

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def _files_holding(root: Path, token: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]


def _doctor_row(env: dict[str, str]) -> list[str]:
    """`atoll doctor`'s orphan-reefs row: requirement, status, found, needed by, fix."""
    done = atoll(["doctor", "--only", "orphan-reefs", "--json"], env)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    return [
        row["requirement"],
        row["status"],
        row["found"],
        ", ".join(row["needed_by"]),
        row["fix"],
    ]


def test_stack_down_orphans_stops_the_reef_of_a_killed_job(
    venv_bin, tmp_path, upstream, stack_env, mark
):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    token = stack_env["REEF_TOKEN"]
    env = _harbor_env(stack_env, tmp_path)  # its HOME holds this test's index of job-owned Reefs
    elsewhere = tmp_path / "elsewhere"
    argv, jobs = _harbor_argv(
        venv_bin, tmp_path, "--pk", f"upstream_url={upstream.base_url}", "--pk", f"port={port}",
        "--ak", "linger_s=120",
    )  # fmt: skip
    harbor = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while not list(jobs.glob("*/*/agent/receipt.json")):
            assert harbor.poll() is None and time.monotonic() < deadline, "the job did not start"
            time.sleep(0.1)
        # A running job's Reef is its own: not listed, not stopped.
        status = atoll(["stack", "status", "--stack-dir", str(elsewhere)], env)
        assert "orphans: no Reef left behind by a killed job" in status.stdout, status.stderr
        assert _doctor_row(env)[1] == "ok"
        spared = atoll(["stack", "down", "--orphans"], env)
        assert "no Reef left behind by a killed job" in spared.stderr
        assert health.is_reef(url)
        holding = _files_holding(tmp_path, token)
        assert holding, "Reef wrote no resolved configuration"
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in holding), holding
    finally:
        harbor.kill()  # SIGKILL: no plugin hook, no atexit
        harbor.wait(timeout=30)
    assert health.is_reef(url), "the killed job's Reef is not running"

    status = atoll(["stack", "status", "--stack-dir", str(elsewhere)], env)
    assert status.returncode == 0, status.stderr
    (orphan,) = [line for line in status.stdout.splitlines() if line.startswith("orphan: ")]
    assert orphan.startswith(f"orphan: {url}: left by a killed job (pid {harbor.pid})")
    assert "reef-serve pid" in orphan and "runtime file(s) still hold its token" in orphan
    assert "atoll stack down --orphans" in status.stdout
    _, status_cell, found, needed_by, fix = _doctor_row(env)
    assert status_cell == "warning" and found.startswith(f"{url}: left by a killed job")
    assert "reef-stack" in needed_by and fix == "`atoll stack down --orphans`"

    down = atoll(["stack", "down", "--orphans"], env)
    assert down.returncode == 0, down.stderr
    assert f"stopped the Reef at {url} that a killed job left running" in down.stderr
    assert _settles(mark), "a process of the killed job's Reef is still running"
    assert not health.healthy(url)
    assert _files_holding(tmp_path, token) == []

    again = atoll(["stack", "status", "--stack-dir", str(elsewhere)], env)
    assert "orphans: no Reef left behind by a killed job" in again.stdout
    assert _doctor_row(env)[1] == "ok"
