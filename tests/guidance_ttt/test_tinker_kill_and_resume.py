"""training=tinker killed between two durable writes of a step's training resumes correctly.

The run is killed (SIGKILL, at a named failpoint) after the policy's
optimizer step and before its save, after the save and before the run
recorded it, or after the checkpoint row and before the archive commit; the
same command then finishes the run. What must hold: every step is in the
checkpoint chain exactly once; the interrupted step trains again from the
previous step's saved state (its optimizer step is never applied twice) on
the same batch, or, once its row was written, is committed without training
again; no guidance call is ever sent twice; and the next step samples only
from the weights its predecessor saved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.openai_server import ScriptedOpenAIServer
from tinker_run import WordExecutor, reef_in_front_of_policy, tinker_settings

from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import read_step
from atoll.guidance_ttt.training.failpoints import VARIABLE

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

DRIVER = Path(__file__).with_name("run_driver.py")


def drive(
    work: Path, args: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    path = work / f"args-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(args))
    return subprocess.run(
        [sys.executable, str(DRIVER), str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )


def rows(state: Path) -> list[dict[str, Any]]:
    chain = RunDir(state).tinker_checkpoints
    return [json.loads(line) for line in chain.read_text().splitlines()] if chain.exists() else []


@pytest.mark.parametrize(
    ("point", "row_written"),
    [
        ("policy-after-optim-step", False),
        ("policy-after-save", False),
        ("barrier-after-checkpoint-row", True),
    ],
)
def test_a_run_killed_in_a_steps_training_resumes_without_training_anything_twice(
    tmp_path: Path,
    guidance_server_env: dict[str, str],
    guidance_model: Path,
    tinker_task_dir: Path,
    judge_url: str,
    point: str,
    row_written: bool,
) -> None:
    state = tmp_path / "state"
    paths = RunDir(state)
    with (
        reef_in_front_of_policy(tmp_path / "reef") as (reef, port),
        ScriptedOpenAIServer(WordExecutor()) as executor,
    ):
        settings = tinker_settings(state, guidance_model, port, executor.base_url)
        # Training only moves when a group's rewards differ: a rate that surely moves it.
        settings["learning_rate"] = 1e-2
        args = {
            "task_dir": str(tinker_task_dir),
            "reef_url": reef.url,
            "judge_url": judge_url,
            "settings": settings,
        }
        env = {**os.environ, **guidance_server_env, "REEF_TOKEN": reef.token}
        killed = drive(tmp_path, args, {**env, VARIABLE: f"{point}:1"})
        assert killed.returncode != 0, killed.stderr
        chain = rows(state)
        assert [r["step"] for r in chain] == ([0, 1] if row_written else [0])
        batch_before = paths.step_training(1).read_text()
        resumed = drive(tmp_path, args, env)
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout) == {"steps": 3}
    final = rows(state)
    assert [r["step"] for r in final] == [0, 1, 2]
    if row_written:  # committed from its row, never trained again
        assert final[1] == chain[1]
    # The interrupted step trained on the very batch it was first given.
    assert paths.step_training(1).read_text() == batch_before
    # Each step sampled from its predecessor's saved weights, after the resume too.
    samplers = [r["sampler_path"] for r in final]
    assert [r["sampled_by"] for r in final[1:]] == [[s] for s in samplers[:-1]]
    assert len(set(samplers)) == 3
    # No guidance call of any step was sent twice: one attempt per slot, every slot answered.
    for step in range(3):
        journal = read_step(paths.step_journal(step), step)
        assert set(journal.attempts.values()) == {1}
        assert len(journal.samples) == 2 * 4 and not journal.orphans
