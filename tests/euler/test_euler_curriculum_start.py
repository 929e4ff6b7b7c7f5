"""`atoll euler curriculum --start N` through the command: the problems before N are recorded
as skipped in state.json, never as mastered, and progress is not claimed through them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import Steps, bash, solver, write
from support.euler_cli import ATOLL, KEY_ENV
from support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PROGRAM = (
    "n, f, big = 600851475143, 2, 1\n"
    "while f * f <= n:\n"
    "    while n % f == 0:\n"
    "        big, n = f, n // f\n"
    "    f += 1\n"
    "print(max(big, n) if n > 1 else big)\n"
)


def scenarios(key: str, language: str, model: str) -> Steps:
    assert key == "p3", f"the curriculum asked for {key} before problem 3"
    return [write("solution.py", PROGRAM), bash("python3 solution.py")]


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(solver(scenarios)) as server:
        yield server


def test_start_records_the_problems_before_it_as_skipped(
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    command = [
        ATOLL, "euler", "curriculum", "--model", "scripted-model", "--rounds", "1",
        "--store", str(sample_store), "--state", str(state), "--base-url", provider.base_url,
        "--api-key-env", KEY_ENV, "--samples", "1", "--consecutive", "1", "--threshold", "0.5",
        "--languages", "python", "--no-replay", "--max-turns", "8", "--timeout", "120",
        "--start", "3",
    ]  # fmt: skip
    result = subprocess.run(command, env=key_env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "problems 1-2 are recorded as skipped, not mastered" in result.stderr

    saved = json.loads((state / "state.json").read_text("utf-8"))
    assert saved["skipped"] == [1, 2]
    assert saved["mastered"] == [3]  # the round on problem 3 passed
    assert saved["mastered_through"] == 0  # nothing proves 1 and 2, so mastery does not reach 3
    assert saved["current_problem"] == 4 and saved["rounds_completed"] == 1
    round_rows = [
        json.loads(line)
        for line in (state / "rounds" / "0001" / "rows.jsonl").read_text("utf-8").splitlines()
    ]
    assert [(r["problem"], r["status"], r["passed"]) for r in round_rows] == [(3, "scored", True)]
