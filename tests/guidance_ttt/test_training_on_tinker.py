"""training=tinker end to end: the tiny model trained through the local Tinker server, step by step.

Real parts throughout: SkyRL tx serving the Tinker API on CPU, the run's own
policy server in atoll's managed Python 3.11 environment, the real Reef in
front of it recording every guidance call and score, the real embedded judge;
only the executor model is scripted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from packers import PackerExecutor
from rich.console import Console
from support.openai_server import ScriptedOpenAIServer
from tinker_run import polyomino_task, reef_in_front_of_policy, tinker_settings, warm_start

from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.services.wiring import run_search
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("polyomino") / "task"
    polyomino_task(directory)
    return directory


@pytest.fixture(scope="module")
def warm_state(server_env: dict[str, str], tiny_model: Path, task_dir: Path) -> str:
    return warm_start(server_env, tiny_model, load_task(task_dir), "guidance-warm")


def test_a_three_step_tinker_run_trains_each_step_on_exactly_what_it_sampled(
    tmp_path: Path,
    server_env: dict[str, str],
    tiny_model: Path,
    warm_state: str,
    task_dir: Path,
    judge_url: str,
) -> None:
    state_dir = tmp_path / "state"
    with (
        reef_in_front_of_policy(tmp_path / "reef") as (reef, port),
        ScriptedOpenAIServer(PackerExecutor()) as executor,
    ):
        config = agent_config(
            tinker_settings(state_dir, tiny_model, warm_state, port, executor.base_url)
        )
        environ = {
            **os.environ,
            **server_env,
            "REEF_URL": reef.url,
            "REEF_TOKEN": reef.token,
            "FRONTIERCS_JUDGE_URL": judge_url,
        }
        result = run_search(
            config, load_task(task_dir), task_dir, environ=environ, console=Console(stderr=True)
        )
        paths = RunDir(state_dir)
        rows = [json.loads(line) for line in paths.tinker_checkpoints.read_text().splitlines()]
        assert [s.training for s in result.summaries] == ["tinker"] * 3
        assert [r["step"] for r in rows] == [0, 1, 2]
        samplers = [r["sampler_path"] for r in rows]
        assert len(set(samplers)) == 3 and warm_state not in samplers
        # Step s+1 sampled only from the weights saved by step s (step 0 from the warm start).
        assert rows[0]["sampled_by"] == [warm_state]
        assert [r["sampled_by"] for r in rows[1:]] == [[s] for s in samplers[:-1]]
        for step in range(3):
            batch = json.loads(paths.step_training(step).read_text())
            journal = read_step(paths.step_journal(step), step)
            for group in batch["groups"]:
                for member in group["members"]:
                    slot = (group["group"], member["rollout"])
                    sample = journal.samples[slot]
                    done = journal.finished[slot]
                    assert sample.tokens is not None
                    assert member["completion"] == list(sample.tokens.completion)
                    assert member["logprobs"] == list(sample.tokens.logprobs)
                    assert member["reward"] == done.rollout.verification.reward
                    # Reef's record of the call holds the very tokens the update trains on.
                    record = reef.record(config_scenario(state_dir), sample.receipt)
                    response = record["payload"]["response"]
                    assert response["choices"][0]["token_ids"] == member["completion"]
                    assert response["system_fingerprint"] == member["sampler"]
            metrics = rows[step]["metrics"]
            assert len(metrics["betas"]) == 2
            assert metrics["non_constant_groups"] == sum(not g["constant"] for g in batch["groups"])
            # A step whose groups all had equal rewards makes no optimizer step, and still
            # saves the weights, so the next step samples from a checkpoint of its own.
            assert metrics["updated"] is (metrics["non_constant_groups"] > 0)


def config_scenario(state_dir: Path) -> str:
    return str(json.loads((RunDir(state_dir).resume_state).read_text())["scenario"])
