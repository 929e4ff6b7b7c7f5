"""A Harbor trial whose judge dies after the first committed step: an error, and the committed record.

The trial must end in an error that names the judge (never a reward made up
from a failure), the agent's logs must still describe the step that was
committed, and rerunning the same command once the judge is back (the same
judge at the same URL: a run resumes only with the judge that scored it) must
finish the run from there, without sampling the committed step again.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from packers import PackerExecutor, PromptGuidance
from support.openai_server import acting_at
from test_e2e_harbor_trial import atoll_run, trial_dir
from test_faults_kill_and_resume import SALT

from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures", "judge_process"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def test_a_judge_lost_after_a_commit_fails_the_trial_and_a_rerun_finishes_the_run(
    tmp_path, venv_bin, reef_server, reset_reef_upstream, scripted_llm, judge_process, restart_judge
):
    process, dying_judge = judge_process
    reset_reef_upstream.script = PromptGuidance(SALT)

    def kill_judge() -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    # G=1, R=2: calls 1-2 are step 0, call 3 is step 1
    packers = PackerExecutor()
    scripted_llm.script = acting_at(3, kill_judge, packers)
    settings = {
        "groups": 1,
        "rollouts": 2,
        "steps": 2,
        "training": "off",
        "executor": "openai",
        "executor_base_url": scripted_llm.base_url,
        "executor_model": "scripted-executor",
        "guidance_model": "scripted",
        "state_dir": tmp_path / "state",
    }
    first = tmp_path / "first"
    first.mkdir()
    done = atoll_run(
        venv_bin,
        first,
        reef_server=reef_server,
        executor_url=scripted_llm.base_url,
        judge_url=dying_judge,
        ak=settings,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    trial = trial_dir(first)
    assert any(
        line.startswith("error: 1 trial of job") and line.endswith(f"{trial.name} (StepFailed)")
        for line in done.stderr.splitlines()
    ), done.stderr[-3000:]
    result = json.loads((trial / "result.json").read_text())
    failure = result["exception_info"]
    assert failure["exception_type"] == "StepFailed"
    assert failure["exception_message"].startswith("step 1 stopped: judge failure")
    lines = (trial / "agent" / "steps.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [0]
    assert result["agent_result"]["metadata"]["steps"] == 1
    journaled = read_step(step_journal_path(run_dir(tmp_path / "state"), 1), 1)
    sampled_before = len(journaled.samples)
    assert sampled_before >= 1  # the guidance whose program the judge never scored

    # Same command, the judge back at its URL: only step 1 is finished, from its journal.
    scripted_llm.script = packers
    guidance_before = len(reset_reef_upstream.chat_requests())
    second = tmp_path / "second"
    second.mkdir()
    restart_judge()
    done = atoll_run(
        venv_bin,
        second,
        reef_server=reef_server,
        executor_url=scripted_llm.base_url,
        judge_url=dying_judge,
        ak=settings,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((trial_dir(second) / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    lines = [
        json.loads(x)
        for x in (trial_dir(second) / "agent" / "steps.jsonl").read_text().splitlines()
    ]
    assert [x["step"] for x in lines] == [0, 1]
    # Guidance journaled before the judge died is reused; only the rest is sampled now.
    assert len(reset_reef_upstream.chat_requests()) - guidance_before == 2 - sampled_before
    assert result["verifier_result"]["rewards"]["reward"] > 0
