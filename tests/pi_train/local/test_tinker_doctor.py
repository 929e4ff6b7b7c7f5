"""`atoll doctor` reports the local Tinker server (the running case is in test_tinker_training)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _doctor(venv_bin: Path, local_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "ATOLL_TINKER_LOCAL_DIR": str(local_dir)}
    return subprocess.run(
        [str(venv_bin / "atoll"), "doctor", "--only", "tinker-local"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_doctor_says_no_local_server_runs(venv_bin: Path, tmp_path: Path) -> None:
    done = _doctor(venv_bin, tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "tinker-local" in line)
    assert "ok" in line and "no local server" in line and "atoll tinker local up" in line


def test_doctor_drops_the_record_of_a_server_that_is_gone(venv_bin: Path, tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    record = {"pid": gone.pid, "port": 1, "base_model": "/m", "log": str(tmp_path / "log")}
    (tmp_path / "server.json").write_text(json.dumps(record))
    done = _doctor(venv_bin, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no local server" in done.stdout
    assert not (tmp_path / "server.json").exists()
