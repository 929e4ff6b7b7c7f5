"""The curriculum with real rollouts: killed mid-round, resumed with nothing lost or counted twice.

Round 1 is problem 1 (two frontier attempts); once it is mastered (one passing
round suffices here), round 2 is problem 2 plus one replay of problem 1 (the
70/20/10 mix over two frontier attempts). The first run is SIGKILLed as soon
as round 1 has one row; the rerun finishes both rounds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import Steps, bash, solver, write
from support.euler_cli import ATOLL, KEY_ENV
from support.openai_server import ScriptedOpenAIServer
from support.processes import children_of

from atoll.euler import curriculum

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PROGRAMS = {
    "p1": "print(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))\n",
    "p2": "a, b, s = 1, 2, 0\nwhile a <= 4000000:\n    s += a if a % 2 == 0 else 0\n    a, b = b, a + b\nprint(s)\n",
}


def scenarios(key: str, language: str, model: str) -> Steps:
    return [write("solution.py", PROGRAMS[key]), bash("python3 solution.py")]


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedOpenAIServer]:
    # a little latency per model turn, so that a kill lands inside a round
    with ScriptedOpenAIServer(solver(scenarios, delay_s=0.4)) as server:
        yield server


def test_kill_and_resume(
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    command = [
        ATOLL,
        "euler",
        "curriculum",
        "--model",
        "scripted-model",
        "--rounds",
        "2",
        "--store",
        str(sample_store),
        "--state",
        str(state),
        "--base-url",
        provider.base_url,
        "--api-key-env",
        KEY_ENV,
        "--samples",
        "2",
        "--consecutive",
        "1",
        "--threshold",
        "0.5",
        "--languages",
        "python",
        "--max-turns",
        "8",
        "--timeout",
        "120",
    ]
    first = subprocess.Popen(command, env=key_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rows_1 = state / "rounds" / "0001" / "rows.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and first.poll() is None:
        if rows_1.exists() and rows_1.read_text().count("\n") >= 1:
            break
        time.sleep(0.1)
    assert first.poll() is None, first.stderr.read().decode()[-2000:] if first.stderr else ""
    pi_processes = children_of(first.pid)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    for pid in pi_processes:  # Pi runs in its own process group: end what this test started
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    killed_state = json.loads((state / "state.json").read_text())
    assert killed_state["open_round"] == 1 and killed_state["rounds_completed"] == 0
    assert len(rows_1.read_text().splitlines()) == 1

    second = subprocess.run(command, env=key_env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resuming round 1" in second.stderr
    assert "resuming: 1 of 2 attempts already scored" in second.stderr

    round_1 = [json.loads(line) for line in rows_1.read_text().splitlines()]
    assert len(round_1) == 2 and sorted(r["sample"] for r in round_1) == [0, 1]
    assert all(r["status"] == "scored" and r["passed"] for r in round_1)
    saved = curriculum.load(state)
    assert saved is not None
    assert (saved.current_problem, saved.mastered_through, saved.rounds_completed) == (3, 2, 2)
    assert saved.mastered == [1, 2] and saved.open_round is None
    rounds = [e for e in saved.history if e["event"] == "round"]
    assert [(e["problem"], e["attempts"], e["passes"]) for e in rounds] == [(1, 2, 2), (2, 2, 2)]
    assert rounds[1]["replay"]["replay-recent"] == {"attempts": 1, "passes": 1}

    plan_2 = json.loads((state / "rounds" / "0002" / "plan.json").read_text())
    assert plan_2["mix"]["counts"] == {"frontier": 2, "replay-recent": 1, "replay-older": 0}
    round_2 = [
        json.loads(line)
        for line in (state / "rounds" / "0002" / "rows.jsonl").read_text().splitlines()
    ]
    assert sorted((r["phase"], r["problem"]) for r in round_2) == [
        ("frontier", 2),
        ("frontier", 2),
        ("replay-recent", 1),
    ]
    assert "replay mix 70%/20%/10% configured; this round: frontier 2" in second.stderr
    assert "Curriculum round 2" in (state / "rounds" / "0002" / "summary.md").read_text()

    # A new model revision resets consecutive passes; a missing statement stops progression.
    store_copy = tmp_path / "store"
    subprocess.run(["cp", "-a", str(sample_store), str(store_copy)], check=True)
    (store_copy / "problems" / "0003.txt").unlink()
    third = subprocess.run(
        [
            *command[: command.index("--store") + 1],
            str(store_copy),
            *command[command.index("--store") + 2 :],
            "--model-revision",
            "adapter-2",
        ],
        env=key_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 3, third.stderr[-2000:]
    assert "the model signature changed" in third.stderr
    assert third.stderr.strip().splitlines()[-1] == (
        "error: progression stopped at problem 3: the statement of problem 3 is missing"
    )
    final = curriculum.load(state)
    assert final is not None and final.current_problem == 3 and final.stopped["problem"] == 3
    assert [e["event"] for e in final.history][-2:] == ["model_change", "stopped"]
