"""`atoll judge serve` in a process of its own, for tests that must kill the judge mid-run."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from support.ports import free_port

from atoll.judge.problems import BUILTIN_PROBLEMS


def _problems(root: Path) -> Path:
    """Problem 0 cut down to two small cases, as `atoll judge serve --problems` reads it."""
    problem = root / "problems" / "0"
    (problem / "testdata").mkdir(parents=True)
    for name in ("problem.toml", "statement.txt", "LICENSE"):
        shutil.copy(BUILTIN_PROBLEMS / "0" / name, problem / name)
    for number, case in enumerate((1, 2), start=1):
        shutil.copy(
            BUILTIN_PROBLEMS / "0" / "testdata" / f"{case}.in",
            problem / "testdata" / f"{number}.in",
        )
    return root / "problems"


def serve_judge(venv_bin: Path, root: Path, port: int) -> subprocess.Popen[bytes]:
    """`atoll judge serve` on `port` with the problems and state under `root`, once it answers.

    Called again with the same `root` and `port`, it restarts the same judge at the same URL.
    """
    problems = root / "problems"
    if not problems.is_dir():
        _problems(root)
    process = subprocess.Popen(
        [
            str(venv_bin / "atoll"),
            "judge",
            "serve",
            "--port",
            str(port),
            "--problems",
            str(problems),
            "--state-dir",
            str(root / "state"),
            "--workers",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return process
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("atoll judge serve did not start") from None
            time.sleep(0.2)


def stop_judge(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


@pytest.fixture
def judge_process(tmp_path, venv_bin):
    """`atoll judge serve` in its own process, so that a test can kill it."""
    port = free_port()
    process = serve_judge(venv_bin, tmp_path / "judge", port)
    yield process, f"http://127.0.0.1:{port}"
    stop_judge(process)


@pytest.fixture
def restart_judge(tmp_path, venv_bin, judge_process):
    """Start a killed `judge_process` again: the same judge, at the same URL."""
    _, url = judge_process
    started: list[subprocess.Popen[bytes]] = []
    yield lambda: started.append(serve_judge(venv_bin, tmp_path / "judge", int(url.split(":")[-1])))
    for process in started:
        stop_judge(process)
