"""training=tinker end to end: a tiny guidance model trained through the local Tinker server.

Real parts throughout: SkyRL tx serving the Tinker API on CPU, the run's own
policy server in atoll's managed Python 3.11 environment, the real Reef in
front of it recording every guidance call and score, the real embedded judge;
only the executor model is scripted (by the guidance's word).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from rich.console import Console
from support.openai_server import ScriptedOpenAIServer
from tinker_run import WordExecutor, lora_start, reef_in_front_of_policy, tinker_settings

from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.services.wiring import run_search
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]
# Generous: the first test here also pays for the run's guidance model (built once, by the
# first worker to ask, while the others wait) and for its worker's own server of it.
pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(2400)]


def test_a_three_step_tinker_run_trains_each_step_on_exactly_what_it_sampled(
    tmp_path: Path,
    guidance_server_env: dict[str, str],
    guidance_model: Path,
    tinker_task_dir: Path,
    judge_url: str,
) -> None:
    state_dir = tmp_path / "state"
    task = load_task(tinker_task_dir)
    start = lora_start(guidance_server_env, guidance_model, task, "guidance-start")
    with (
        reef_in_front_of_policy(tmp_path / "reef") as (reef, port),
        ScriptedOpenAIServer(WordExecutor()) as executor,
    ):
        config = agent_config(
            tinker_settings(
                state_dir, guidance_model, port, executor.base_url, tinker_load_checkpoint=start
            )
        )
        environ = {
            **os.environ,
            **guidance_server_env,
            "REEF_URL": reef.url,
            "REEF_TOKEN": reef.token,
            "FRONTIERCS_JUDGE_URL": judge_url,
        }
        result = run_search(
            config, task, tinker_task_dir, environ=environ, console=Console(stderr=True)
        )
        paths = RunDir(state_dir)
        scenario = str(json.loads(paths.resume_state.read_text())["scenario"])
        rows = [json.loads(line) for line in paths.tinker_checkpoints.read_text().splitlines()]
        assert [s.training for s in result.summaries] == ["tinker"] * 3
        assert [r["step"] for r in rows] == [0, 1, 2]
        samplers = [r["sampler_path"] for r in rows]
        assert len(set(samplers)) == 3 and start not in samplers
        # Step s+1 sampled only from the weights saved by step s (step 0 from the start state).
        assert rows[0]["sampled_by"] == [start]
        assert [r["sampled_by"] for r in rows[1:]] == [[s] for s in samplers[:-1]]
        # Every guidance call was answered (a policy server that fails under concurrent
        # requests would book failed rollouts), each under a receipt of its own.
        assert [s.failed_guidance_calls for s in result.summaries] == [0, 0, 0]
        receipts = set()
        updated = 0
        for step in range(3):
            batch = json.loads(paths.step_training(step).read_text())
            journal = read_step(paths.step_journal(step), step)
            for group in batch["groups"]:
                rewards = [m["reward"] for m in group["members"]]
                assert group["constant"] == (len(set(rewards)) == 1)
                for member in group["members"]:
                    slot = (group["group"], member["rollout"])
                    sample = journal.samples[slot]
                    receipts.add(sample.receipt)
                    assert sample.tokens is not None
                    assert member["completion"] == list(sample.tokens.completion)
                    assert member["logprobs"] == list(sample.tokens.logprobs)
                    assert member["reward"] == journal.finished[slot].rollout.verification.reward
                    # Reef's record of the call holds the very tokens the update trains on.
                    record = reef.record(scenario, sample.receipt)
                    response = record["payload"]["response"]
                    assert response["choices"][0]["token_ids"] == member["completion"]
                    assert response["system_fingerprint"] == member["sampler"]
            metrics = rows[step]["metrics"]
            assert len(metrics["betas"]) == 2
            assert metrics["non_constant_groups"] == sum(not g["constant"] for g in batch["groups"])
            assert metrics["updated"] is (metrics["non_constant_groups"] > 0)
            updated += metrics["updated"]
            if metrics["updated"]:
                assert math.isfinite(metrics["loss"])
                assert metrics["trained_samples"] == 4 * metrics["non_constant_groups"]
                # The default KL-to-base shaping ran (test_tinker_kill_and_resume.py's runs do
                # without it): its estimate is recorded with the step.
                assert math.isfinite(metrics["kl_policy_base"])
        assert len(receipts) == 3 * 2 * 4
        assert updated > 0, "no step had a group with rewards to learn from"
