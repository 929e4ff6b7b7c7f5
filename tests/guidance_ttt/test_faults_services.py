"""Services failing under a running search: the judge dies mid-step, the executor answers 5xx.

A judge that goes away says nothing about the program it was judging, so the
step must stop with an error naming the judge, never book a reward of 0. An
executor's transient 5xx is the executor client's to retry; the guidance
model is never sampled again for it.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from packers import PackerExecutor, PromptGuidance
from run_driver import run
from support.openai_server import Reply, acting_at, replies_first
from test_faults_kill_and_resume import SALT, Driver

from atoll.guidance_ttt.search.step import StepFailed
from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, run_dir

pytest_plugins = ["support.fixtures", "judge_process"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_a_judge_that_dies_mid_step_stops_the_step_with_a_clear_error(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_process
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    process, url = judge_process
    reset_reef_upstream.script = PromptGuidance(SALT)

    def kill_judge() -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    scripted_llm.script = acting_at(2, kill_judge, PackerExecutor())
    driver = Driver(tmp_path, reef_server, scripted_llm.base_url, url)
    environ = {"REEF_TOKEN": reef_server.token}
    with pytest.raises(StepFailed, match=r"step 0 stopped: judge failure.*unreachable"):
        run(driver.args, environ)

    # Nothing of step 0 was committed, and no judge failure reached Reef as a score.
    committed = json.loads((run_dir(driver.state_dir) / COMMITTED_FILE).read_text())
    assert committed["archive"]["step"] == 0
    for record in reef_server.records(driver.scenario, "report"):
        payload = reef_server.record(driver.scenario, record["agent_record_id"])["payload"]
        assert payload["feedback"].startswith("valid:"), payload["feedback"]


def test_executor_5xx_is_retried_without_sampling_guidance_again(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    reset_reef_upstream.script = PromptGuidance(SALT)
    overloaded = Reply(status=503, error_message="overloaded")
    scripted_llm.script = replies_first([overloaded] * 2, PackerExecutor())
    driver = Driver(tmp_path, reef_server, scripted_llm.base_url, judge_url)
    environ = {"REEF_TOKEN": reef_server.token}
    guidance_before = len(reset_reef_upstream.chat_requests())
    args = json.loads(json.dumps(driver.args))
    args["settings"]["steps"] = 1
    result = run(args, environ)

    (summary,) = result.summaries
    assert summary.sampled == 2 and summary.valid == 2
    assert len(scripted_llm.chat_requests()) == 2 + 2  # two answers after two 503s
    assert len(reset_reef_upstream.chat_requests()) - guidance_before == 2
    assert len(reef_server.records(driver.scenario, "report")) == 2
