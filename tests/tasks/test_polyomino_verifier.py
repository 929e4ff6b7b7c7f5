"""The task's verifier script (tests/test.sh -> tests/score.py) against a real judge.

It runs under Debian's own python3 where there is one, as inside the task
image, with the solution and log paths pointed at temporary files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from polyomino_support import free_port

pytestmark = pytest.mark.timeout(300)

PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def _verify(
    task_dir: Path, tmp_path: Path, judge_url: str | None, solution: bytes | None
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
    }
    if judge_url is not None:
        env["FRONTIERCS_JUDGE_URL"] = judge_url
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


def test_seed_gets_its_recorded_score(
    task_dir: Path, tmp_path: Path, judge_url: str, recorded: dict[str, Any]
) -> None:
    seed = (task_dir / "solution" / "solution.cpp").read_bytes()
    done, logs = _verify(task_dir, tmp_path, judge_url, seed)
    assert done.returncode == 0, done.stderr
    reward, details = _read(logs)
    assert reward == {"reward": recorded["score"], "raw_score": recorded["raw_score"]}
    assert details["status"] == "done"
    assert details["solution_sha256"] == recorded["program_sha256"]
    assert len(details["judge"]["cases"]) == 70
    assert sorted(p.name for p in logs.iterdir()) == ["judge-result.json", "reward.json"]


def test_unreachable_judge_is_an_error_not_a_score(task_dir: Path, tmp_path: Path) -> None:
    seed = (task_dir / "solution" / "solution.cpp").read_bytes()
    done, logs = _verify(task_dir, tmp_path, f"http://127.0.0.1:{free_port()}", seed)
    assert done.returncode != 0
    assert "cannot reach" in done.stderr and "no reward written" in done.stderr
    assert not (logs / "reward.json").exists()


def test_judge_url_must_be_set(task_dir: Path, tmp_path: Path) -> None:
    done, logs = _verify(task_dir, tmp_path, None, b"int main() {}\n")
    assert done.returncode != 0
    assert "FRONTIERCS_JUDGE_URL is not set" in done.stderr
    assert not (logs / "reward.json").exists()


@pytest.mark.parametrize("solution", [None, b"", b"  \n"])
def test_missing_solution_scores_zero(
    task_dir: Path, tmp_path: Path, judge_url: str, solution: bytes | None
) -> None:
    done, logs = _verify(task_dir, tmp_path, judge_url, solution)
    assert done.returncode == 0, done.stderr
    reward, details = _read(logs)
    assert reward == {"reward": 0.0, "raw_score": 0.0}
    assert details["status"] == "missing"


def test_program_that_does_not_compile_scores_zero(
    task_dir: Path, tmp_path: Path, judge_url: str
) -> None:
    done, logs = _verify(task_dir, tmp_path, judge_url, b"int main() { return missing; }\n")
    assert done.returncode == 0, done.stderr
    reward, details = _read(logs)
    assert reward == {"reward": 0.0, "raw_score": 0.0}
    assert details["status"] == "invalid"
    assert "compile" in details["message"]
