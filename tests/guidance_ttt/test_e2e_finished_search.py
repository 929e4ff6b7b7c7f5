"""A Guidance-TTT job killed after its search finished, before Harbor's verifier scored it.

The search is paid for and committed, but the trial never got its reward.
Running the same command again must hand the committed best program to the
task's verifier without sampling anything: exit 0, the reward of the
committed best, and not one request to either model. The kill is fired the
moment the run writes its result (the last thing the search does before the
agent uploads the best program and Harbor starts the verifier), with SIGKILL
to the whole job, so no clean-up of Harbor's or ours runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from packers import CountingGuidance, PackerExecutor
from test_e2e_harbor_trial import atoll_command, atoll_run, trial_dir

from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, RESULT_FILE, run_dir

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def _kill_once_the_search_finished(argv: list[str], env: dict[str, str], work: Path, done: Path):
    """Start the job and SIGKILL its whole process group as soon as `done` appears."""
    job = subprocess.Popen(
        argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not done.exists():
            assert job.poll() is None, "the job ended before its search finished"
            assert time.monotonic() < deadline, "the search did not finish"
            time.sleep(0.005)
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=30)


def test_a_rerun_after_a_kill_before_the_verifier_scores_the_committed_best(
    tmp_path, venv_bin, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = CountingGuidance(malformed_every=0)
    scripted_llm.script = PackerExecutor()
    state_dir = tmp_path / "state"
    settings = {
        "groups": 1,
        "rollouts": 2,
        "steps": 1,
        "training": "off",
        "executor": "openai",
        "executor_base_url": scripted_llm.base_url,
        "executor_model": "scripted-executor",
        "guidance_model": "scripted",
        "state_dir": state_dir,
    }
    killed = tmp_path / "killed"
    killed.mkdir()
    argv, env = atoll_command(
        venv_bin, killed, reef_server=reef_server, judge_url=judge_url, ak=settings
    )
    guided_before = len(reset_reef_upstream.chat_requests())
    _kill_once_the_search_finished(argv, env, killed, run_dir(state_dir) / RESULT_FILE)
    assert len(reset_reef_upstream.chat_requests()) - guided_before == 2  # the search ran
    assert list((killed / "jobs").glob("*/*/verifier/reward.json")) == []  # never scored
    committed = json.loads((run_dir(state_dir) / COMMITTED_FILE).read_text())["archive"]
    assert committed["step"] == 1
    best = next(n for n in committed["nodes"] if n["id"] == committed["best_id"])

    guided, executed = len(reset_reef_upstream.chat_requests()), len(scripted_llm.chat_requests())
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    done = atoll_run(
        venv_bin,
        rerun,
        reef_server=reef_server,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        ak=settings,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(reset_reef_upstream.chat_requests()) == guided  # no guidance call
    assert len(scripted_llm.chat_requests()) == executed  # no executor call
    trial = trial_dir(rerun)
    result = json.loads((trial / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    reward = json.loads((trial / "verifier" / "reward.json").read_text())
    assert reward["raw_score"] == pytest.approx(best["raw_score"])
    assert result["verifier_result"]["rewards"]["reward"] == pytest.approx(reward["reward"])
    assert reward["reward"] > 0
