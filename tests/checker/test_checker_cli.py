"""`atoll checker grade` and its errors, through the real `atoll` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'x': 0.75}))\n"


def atoll(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "atoll"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "160", "TERM": "dumb"},
    )


@pytest.mark.slow
def test_grade_prints_each_case_and_the_reward(toy, program):
    done = atoll("checker", "grade", str(toy), str(program(GOOD)), "--out", str(toy / "out"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(" ok ") == 3
    assert "reward 0.750000 over 3 cases" in done.stdout
    assert json.loads((toy / "out" / "reward.json").read_text()) == {"reward": 0.75}


def test_grade_json(toy, program):
    done = atoll("checker", "grade", str(toy), str(program(GOOD)), "--json")
    assert done.returncode == 0, done.stderr
    scores = json.loads(done.stdout)
    assert scores["reward"] == 0.75 and [c["status"] for c in scores["cases"]] == ["ok"] * 3
    assert not (toy / "out").exists()  # nothing written without --out


@pytest.mark.slow
def test_errors_are_one_line(toy, program, tmp_path):
    not_a_task = atoll("checker", "grade", str(tmp_path), str(program(GOOD)))
    assert not_a_task.returncode == 2
    assert (
        not_a_task.stderr.strip()
        == f"error: {tmp_path} is not a task directory: it has no tests/ directory"
    )
    (toy / "tests" / "scorer.py").write_text("def score(instance, output):\n    return 1.5\n")
    broken = atoll("checker", "grade", str(toy), str(program(GOOD)))
    assert broken.returncode == 2
    lines = broken.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: checker error (nothing was scored)")
    assert "scorer is in [0, 1]" in lines[0] and "Traceback" not in broken.stderr
