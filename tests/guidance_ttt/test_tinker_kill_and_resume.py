"""training=tinker killed between two durable writes of a step's training resumes correctly.

The run is killed (SIGKILL, at a named failpoint) after the policy's
optimizer step and before its save, after the save and before the run
recorded it, or after the checkpoint row and before the archive commit; the
same command then finishes the run. What must hold: the final archive is
exactly the archive of an unbroken run with the same settings; every step is
in the checkpoint chain exactly once; the interrupted step trains again from
the previous step's saved state (its optimizer step is never applied twice)
on the same batch, or, once its row was written, is committed without
training again; no guidance call is ever sent twice; and the next step
samples only from the weights its predecessor saved.

Both runs start from one saved training state and seed each guidance sample
by its slot (`sampling_seed`), and the local Tinker server samples and trains
deterministically on CPU, so the unbroken run is a reference the resumed run
must match node for node.
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
from tinker_run import WordExecutor, lora_start, reef_in_front_of_policy, tinker_settings

from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import read_step
from atoll.guidance_ttt.training.failpoints import VARIABLE

pytest_plugins = ["support.fixtures"]
# Generous: the one test runs four runs and three resumes, and also pays for the run's guidance
# model (built once, by the first worker to ask, while the others wait) and for its worker's own
# server of it.
pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(3600)]

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


def canonical(state: Path) -> dict[str, Any]:
    """The committed archive as content, not ids: each node by its program, summary, guidance,
    score and step and its parent's the same way (rollouts finish in any order, so two equal
    runs may number the same children differently), and the best node's program."""
    archive = json.loads(RunDir(state).committed_archive.read_text())["archive"]
    by_id = {node["id"]: node for node in archive["nodes"]}

    def key(node_id: int | None) -> Any:
        if node_id is None:
            return None
        node = by_id[node_id]
        entry = node["entry"]
        return (
            entry["program"],
            entry["summary"],
            entry.get("guidance"),
            node.get("raw_score"),
            node.get("timestep"),
            key(node.get("parent")),
        )

    nodes = sorted((repr(key(node_id)) for node_id in by_id), key=str)
    return {"nodes": nodes, "best": repr(key(archive.get("best_id")))}


def samples(state: Path, steps: int) -> dict[tuple[int, int, int], list[int]]:
    """Every slot's sampled completion tokens."""
    found = {}
    for step in range(steps):
        journal = read_step(RunDir(state).step_journal(step), step)
        for (group, rollout), sample in journal.samples.items():
            assert sample.tokens is not None
            found[(step, group, rollout)] = list(sample.tokens.completion)
    return found


def guidance_failures(state: Path, steps: int) -> dict[str, str]:
    """Every slot whose guidance call failed or was cut off, with why, and then the policy
    server's last words: what a comparison of samples cannot say when a slot has none."""
    found = {}
    for step in range(steps):
        journal = read_step(RunDir(state).step_journal(step), step)
        for (group, rollout), call in journal.failed_calls.items():
            found[f"{step}/{group}/{rollout}"] = call.error
        for orphan in journal.orphans:
            found[f"{step}/{orphan.group}/{orphan.rollout}"] = f"orphan: {orphan.error}"
    log = RunDir(state).tinker_policy_log
    if found and log.is_file():
        found["policy log"] = log.read_text(errors="replace")[-4000:]
    return found


def run_args(
    state: Path,
    reef: Any,
    port: int,
    executor_url: str,
    judge_url: str,
    task_dir: Path,
    model: Path,
    start: str,
) -> dict[str, Any]:
    # No KL-to-base shaping: it is half of each step's training on two cores, seven runs here,
    # and nothing of a resume; the three-step run (test_training_on_tinker.py) trains with it.
    settings = tinker_settings(
        state, model, port, executor_url, sampling_seed=7, tinker_load_checkpoint=start, kl_coef=0.0
    )
    return {
        "task_dir": str(task_dir),
        "reef_url": reef.url,
        "judge_url": judge_url,
        "settings": settings,
    }


@pytest.fixture(scope="module")
def start_state(
    guidance_server_env: dict[str, str], guidance_model: Path, tinker_task_dir: Path
) -> str:
    return lora_start(guidance_server_env, guidance_model, load_task(tinker_task_dir), "kill-start")


@pytest.fixture(scope="module")
def unbroken(
    tmp_path_factory: pytest.TempPathFactory,
    guidance_server_env: dict[str, str],
    guidance_model: Path,
    tinker_task_dir: Path,
    judge_url: str,
    start_state: str,
) -> dict[str, Any]:
    """The same run, never killed: its archive and every slot's sampled tokens."""
    work = tmp_path_factory.mktemp("unbroken")
    with (
        reef_in_front_of_policy(work / "reef") as (reef, port),
        ScriptedOpenAIServer(WordExecutor()) as executor,
    ):
        args = run_args(
            work / "state",
            reef,
            port,
            executor.base_url,
            judge_url,
            tinker_task_dir,
            guidance_model,
            start_state,
        )
        done = drive(work, args, {**os.environ, **guidance_server_env, "REEF_TOKEN": reef.token})
        assert done.returncode == 0, done.stderr
    failures = guidance_failures(work / "state", 3)
    assert not failures, (failures, done.stderr[-4000:])
    return {"archive": canonical(work / "state"), "samples": samples(work / "state", 3)}


def rows(state: Path) -> list[dict[str, Any]]:
    chain = RunDir(state).tinker_checkpoints
    return [json.loads(line) for line in chain.read_text().splitlines()] if chain.exists() else []


#: Where the run is killed, and whether the step's checkpoint row was durable by then.
KILL_POINTS = (
    ("policy-after-optim-step", False),
    ("policy-after-save", False),
    ("barrier-after-checkpoint-row", True),
)


def test_a_run_killed_in_a_steps_training_resumes_without_training_anything_twice(
    tmp_path: Path,
    guidance_server_env: dict[str, str],
    guidance_model: Path,
    tinker_task_dir: Path,
    judge_url: str,
    start_state: str,
    unbroken: dict[str, Any],
    subtests: pytest.Subtests,
) -> None:
    """Each kill point is a subtest of one test, so that one worker builds the start state and
    the unbroken run once for all of them: as three tests, xdist gives each its own worker, and
    each worker built both again (about 250 s of CPU each)."""
    for point, row_written in KILL_POINTS:
        with subtests.test(point=point):
            kill_and_resume(
                tmp_path / point,
                guidance_server_env,
                guidance_model,
                tinker_task_dir,
                judge_url,
                start_state,
                unbroken,
                point,
                row_written,
            )


def kill_and_resume(
    work: Path,
    guidance_server_env: dict[str, str],
    guidance_model: Path,
    tinker_task_dir: Path,
    judge_url: str,
    start_state: str,
    unbroken: dict[str, Any],
    point: str,
    row_written: bool,
) -> None:
    """Kill the run at `point` in step 1's training, resume it, and hold it to the unbroken run."""
    work.mkdir()
    state = work / "state"
    paths = RunDir(state)
    with (
        reef_in_front_of_policy(work / "reef") as (reef, port),
        ScriptedOpenAIServer(WordExecutor()) as executor,
    ):
        args = run_args(
            state,
            reef,
            port,
            executor.base_url,
            judge_url,
            tinker_task_dir,
            guidance_model,
            start_state,
        )
        env = {**os.environ, **guidance_server_env, "REEF_TOKEN": reef.token}
        killed = drive(work, args, {**env, VARIABLE: f"{point}:1"})
        assert killed.returncode != 0, killed.stderr
        chain = rows(state)
        assert [r["step"] for r in chain] == ([0, 1] if row_written else [0])
        batch_before = paths.step_training(1).read_text()
        resumed = drive(work, args, env)
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout) == {"steps": 3}
    failures = guidance_failures(state, 3)
    assert not failures, (failures, killed.stderr[-4000:], resumed.stderr[-4000:])
    final = rows(state)
    assert [r["step"] for r in final] == [0, 1, 2]
    # Token for token, every step sampled what the unbroken run sampled: the retrained weights
    # are the unbroken run's, and the archive is the same.
    assert samples(state, 3) == unbroken["samples"]
    assert canonical(state) == unbroken["archive"]
    # The interrupted step made an optimizer step, and the next one sampled from its result.
    assert final[1]["metrics"]["updated"] is True
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
