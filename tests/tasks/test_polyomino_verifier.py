"""The task's verifier script (tests/test.sh -> tests/score.py) against a real judge.

It runs under Debian's own python3 where there is one, as inside the task
image, with the solution and log paths pointed at temporary files and the
judge reached through the unix socket `atoll judge serve` listens on.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(300)

PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def _verify(
    task_dir: Path, tmp_path: Path, judge_socket: Path, solution: bytes | None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    program = tmp_path / "workspace" / "solution.cpp"
    program.parent.mkdir(parents=True, exist_ok=True)
    if solution is not None:
        program.write_bytes(solution)
    logs = tmp_path / "logs" / "verifier"
    env = {
        "PATH": f"{Path(PYTHON).parent}:/usr/bin:/bin",
        "POLYOMINO_SOLUTION": str(program),
        "POLYOMINO_VERIFIER_DIR": str(logs),
        "FRONTIERCS_JUDGE_DEADLINE": "120",
        "FRONTIERCS_JUDGE_SOCKET": str(judge_socket),
    }
    done = subprocess.run(
        ["bash", str(task_dir / "tests" / "test.sh")],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    return done, logs


def _read(logs: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    reward = json.loads((logs / "reward.json").read_text())
    details = json.loads((logs / "judge-result.json").read_text())
    return reward, details


@pytest.fixture
def judge_socket(judge_url: str, judge_socket_dir: Path) -> Path:
    return judge_socket_dir / "judge.sock"


@pytest.mark.slow
def test_seed_gets_its_recorded_score(
    task_dir: Path, tmp_path: Path, judge_socket: Path, recorded: dict[str, Any]
) -> None:
    seed = (task_dir / "solution" / "solution.cpp").read_bytes()
    done, logs = _verify(task_dir, tmp_path, judge_socket, seed)
    assert done.returncode == 0, done.stderr
    reward, details = _read(logs)
    assert reward == {"reward": recorded["score"], "raw_score": recorded["raw_score"]}
    assert details["status"] == "done"
    assert details["solution_sha256"] == recorded["program_sha256"]
    assert len(details["judge"]["cases"]) == 70
    assert sorted(p.name for p in logs.iterdir()) == ["judge-result.json", "reward.json"]


def test_a_socket_nobody_serves_is_an_error_not_a_score(task_dir: Path, tmp_path: Path) -> None:
    stale = tmp_path / "judge.sock"  # what a killed judge leaves behind
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(stale))
    seed = (task_dir / "solution" / "solution.cpp").read_bytes()
    done, logs = _verify(task_dir, tmp_path, stale, seed)
    assert done.returncode != 0
    assert "cannot reach the judge" in done.stderr and "no reward written" in done.stderr
    assert not (logs / "reward.json").exists()


def test_a_missing_socket_is_an_error_naming_the_fix(task_dir: Path, tmp_path: Path) -> None:
    done, logs = _verify(task_dir, tmp_path, tmp_path / "absent" / "judge.sock", b"int main(){}")
    assert done.returncode != 0
    assert "no judge socket at" in done.stderr and "FRONTIERCS_JUDGE_SOCKET_DIR" in done.stderr
    assert not (logs / "reward.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("solution", [None, b"", b"  \n"])
def test_missing_solution_scores_zero(
    task_dir: Path, tmp_path: Path, judge_socket: Path, solution: bytes | None
) -> None:
    done, logs = _verify(task_dir, tmp_path, judge_socket, solution)
    assert done.returncode == 0, done.stderr
    reward, details = _read(logs)
    assert reward == {"reward": 0.0, "raw_score": 0.0}
    assert details["status"] == "missing"


@pytest.mark.slow
def test_program_that_does_not_compile_scores_zero(
    task_dir: Path, tmp_path: Path, judge_socket: Path
) -> None:
    done, logs = _verify(task_dir, tmp_path, judge_socket, b"int main() { return missing; }\n")
    assert done.returncode == 0, done.stderr
    reward, details = _read(logs)
    assert reward == {"reward": 0.0, "raw_score": 0.0}
    assert details["status"] == "invalid"
    assert "compile" in details["message"]
