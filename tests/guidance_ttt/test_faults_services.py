"""Services failing under a running search: the judge dies mid-step, the executor answers 5xx.

A judge that goes away says nothing about the program it was judging, so the
step must stop with an error naming the judge, never book a reward of 0. An
executor's transient 5xx is the executor client's to retry; the guidance
model is never sampled again for it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from packers import PackerExecutor, PromptGuidance
from run_driver import run
from support.openai_server import Reply
from support.reef_server import free_port
from test_faults_kill_and_resume import SALT, Driver

from atoll.guidance_ttt.library import COMMITTED_FILE, run_dir
from atoll.guidance_ttt.step import StepFailed
from atoll.judge.problems import BUILTIN_PROBLEMS

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _problems(root: Path) -> Path:
    """Problem 0 cut down to two small cases, as `atoll judge serve --problems` reads it."""
    problem = root / "problems" / "0"
    (problem / "testdata").mkdir(parents=True)
    for name in ("problem.toml", "statement.txt", "LICENSE"):
        shutil.copy(BUILTIN_PROBLEMS / "0" / name, problem / name)
    for number, case in enumerate((1, 2), start=1):
        shutil.copy(
            BUILTIN_PROBLEMS / "0" / "testdata" / f"{case}.in",
            problem / "testdata" / f"{number}.in",
        )
    return root / "problems"


@pytest.fixture
def judge_process(tmp_path, venv_bin):
    """`atoll judge serve` in its own process, so that a test can kill it."""
    port = free_port()
    process = subprocess.Popen(
        [
            str(venv_bin / "atoll"),
            "judge",
            "serve",
            "--port",
            str(port),
            "--problems",
            str(_problems(tmp_path / "judge")),
            "--state-dir",
            str(tmp_path / "judge" / "state"),
            "--workers",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("atoll judge serve did not start") from None
            time.sleep(0.2)
    yield process, url
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


def test_a_judge_that_dies_mid_step_stops_the_step_with_a_clear_error(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_process
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    process, url = judge_process
    reset_reef_upstream.script = PromptGuidance(SALT)
    packers = PackerExecutor()
    calls = {"n": 0}
    lock = threading.Lock()

    def kill_judge_on_second_call(request):
        with lock:
            calls["n"] += 1
            if calls["n"] == 2:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        return packers(request)

    scripted_llm.script = kill_judge_on_second_call
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
    packers = PackerExecutor()
    failures = {"left": 2}
    lock = threading.Lock()

    def flaky(request):
        with lock:
            if failures["left"]:
                failures["left"] -= 1
                return Reply(status=503, error_message="overloaded")
        return packers(request)

    scripted_llm.script = flaky
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
