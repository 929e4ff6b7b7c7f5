"""Fixtures of the task tests: the polyomino task directory, its recorded seed
result, and a real `atoll judge serve` on a free loopback port and on a unix
socket (the way a trial's verifier reaches it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.ports import free_port

TASK_NAME = "polyomino_packing"
JUDGE_START_DEADLINE_S = 60.0


@pytest.fixture(scope="session")
def task_dir(repo: Path) -> Path:
    return repo / "tasks" / TASK_NAME


@pytest.fixture(scope="session")
def recorded(task_dir: Path) -> dict[str, Any]:
    return json.loads((task_dir / "solution" / "result.json").read_text())


@pytest.fixture(scope="session")
def judge_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One state directory (results, compiled binaries) for every judge of the session."""
    return tmp_path_factory.mktemp("judge-state")


@pytest.fixture(scope="session")
def judge_socket_dir() -> Iterator[Path]:
    """The directory of the session judge's socket (short: socket paths have a length limit)."""
    directory = Path(tempfile.mkdtemp(prefix="atoll-judge-test-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def judge_url(venv_bin: Path, judge_state: Path, judge_socket_dir: Path) -> Iterator[str]:
    """`atoll judge serve` on 127.0.0.1:<free port> and in `judge_socket_dir`, for the session."""
    port = free_port()
    log = (judge_state / "serve.log").open("wb")
    process = subprocess.Popen(
        [
            str(venv_bin / "atoll"),
            "judge",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--state-dir",
            str(judge_state),
            "--socket-dir",
            str(judge_socket_dir),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, judge_state / "serve.log")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + JUDGE_START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"atoll judge serve exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if json.loads(response.read())["ok"] is True:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(
        f"atoll judge serve did not answer /health within {JUDGE_START_DEADLINE_S} s"
    )
