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


@pytest.fixture
def judge_process(tmp_path, venv_bin):
    """`atoll judge serve` in its own process, so that a test can kill it."""
    port = free_port()
    process = subprocess.Popen(
        [
            str(venv_bin / "atoll"),
            "judge",
            "serve",
            "--port",
            str(port),
            "--problems",
            str(_problems(tmp_path / "judge")),
            "--state-dir",
            str(tmp_path / "judge" / "state"),
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
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("atoll judge serve did not start") from None
            time.sleep(0.2)
    yield process, url
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)
