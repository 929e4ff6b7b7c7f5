"""The local Tinker service as the tests use it: the `atoll` command, one server per session.

Starting SkyRL tx costs tens of seconds on two cores and every module that
trains or samples needs one, so the pi-train tests share one server (the
session fixture in tests/pi_train/conftest.py). Stopping it is a check too:
nothing it started may be left behind.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.processes import processes_with_environment

# One set of run shapes for every test that trains or samples on the session's server.
# SkyRL tx compiles its sampler per prompt-length bucket and per `max_tokens`, its trainer per
# sequence-length bucket; tests that ask for the same shapes reuse what the first one compiled,
# and a test with other shapes pays compiles of its own. The number of groups per batch
# compiles nothing new (the server samples one sequence at a time and trains one datum at a
# time: BACKEND_CONFIG in atoll.pi_train.local.server), so a test may use fewer groups to roll
# out less.
MAX_TOKENS = "16"
GROUP_SIZE = "2"
RUN_FLAGS = ("--groups-per-batch", "2", "--group-size", GROUP_SIZE, "--max-tokens", MAX_TOKENS)


def run_atoll(
    venv_bin: Path, env: dict[str, str], *args: str, timeout: float = 1200
) -> subprocess.CompletedProcess[str]:
    """`atoll ARGS` from the tests' environment, its output captured."""
    return subprocess.run(
        [str(venv_bin / "atoll"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def make_tiny_model(venv_bin: Path, env: dict[str, str], out: Path, seed: int = 3) -> Path:
    done = run_atoll(venv_bin, env, "tinker", "tiny-model", str(out), "--seed", str(seed))
    assert done.returncode == 0, done.stderr
    return out


@contextmanager
def local_server(
    venv_bin: Path, env: dict[str, str], state_dir: Path, base_model: Path
) -> Iterator[dict[str, str]]:
    """A local server with its own state directory; yields `env` plus the exports it printed.

    On exit the server is stopped with `atoll tinker local down`, and the exit
    fails when any process started with that state directory is left, or
    when `status` still finds a server.
    """
    env = {**env, "ATOLL_TINKER_LOCAL_DIR": str(state_dir)}
    env.pop("TINKER_API_KEY", None)
    env.pop("TINKER_BASE_URL", None)
    done = run_atoll(
        venv_bin, env, "tinker", "local", "up", "--base-model", str(base_model), "--print-env"
    )
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    marker = f"ATOLL_TINKER_LOCAL_DIR={state_dir}"
    server = json.loads((state_dir / "server.json").read_text())
    # The API process and its engine, both started with this state directory.
    assert server["pid"] in processes_with_environment(marker)
    assert len(processes_with_environment(marker)) >= 2
    try:
        yield env
    finally:
        down = run_atoll(venv_bin, env, "tinker", "local", "down", timeout=60)
        assert down.returncode == 0, down.stderr
        assert processes_with_environment(marker) == []
        status = run_atoll(venv_bin, env, "tinker", "local", "status", timeout=30)
        assert status.returncode == 1 and "no local Tinker server" in status.stdout
