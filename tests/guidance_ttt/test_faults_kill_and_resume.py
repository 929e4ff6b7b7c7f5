"""Crash consistency of whole runs: SIGKILL at several points, resume, compare with an unbroken run.

Each run is a separate process (`run_driver.py`) against the real Reef, a
scripted executor writing real packers and the real judge. The scripted
models answer as pure functions of their prompts, so a resumed run that does
its job (reuse journaled rollouts, resample only what no one saw, re-post
unacknowledged reports under the same id) must end with exactly the committed
archive of a run that was never interrupted, and Reef must hold exactly one
report per slot. The kills are fired by the scripted models themselves, at
their n-th request, so each lands at a known point of the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packers import PackerExecutor, PromptGuidance
from support.openai_server import acting_at

from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, run_dir
from atoll.judge.plugin import task_dir

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DRIVER = Path(__file__).with_name("run_driver.py")
GROUPS, ROLLOUTS, STEPS = 1, 2, 3
# With this salt the scripted run is: step 0 valid, step 1 valid and better, step 2 malformed
# guidance (so 6 guidance and 4 executor calls); the kill points below are chosen on that course.
SALT = "o"


class Driver:
    """Starts run_driver.py processes for one state directory and one Reef scenario."""

    def __init__(self, work: Path, reef_server, executor_url: str, judge_url: str) -> None:
        self.work = work
        self.reef_server = reef_server
        self.state_dir = work / "state"
        self.process: subprocess.Popen[str] | None = None
        self.args = {
            "task_dir": str(task_dir("polyomino_packing")),
            "reef_url": reef_server.url,
            "judge_url": judge_url,
            "settings": {
                "groups": GROUPS,
                "rollouts": ROLLOUTS,
                "steps": STEPS,
                "training": "off",
                "executor": "openai",
                "executor_base_url": executor_url,
                "executor_model": "scripted-executor",
                "guidance_model": "scripted",
                "state_dir": str(self.state_dir),
            },
        }

    def start(self, **settings: Any) -> subprocess.Popen[str]:
        args = json.loads(json.dumps(self.args))
        args["settings"].update(settings)
        path = self.work / f"args-{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(args))
        env = dict(
            os.environ, REEF_TOKEN=self.reef_server.token, OPENAI_API_KEY="test-key-not-secret"
        )
        self.process = subprocess.Popen(
            [sys.executable, str(DRIVER), str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        return self.process

    def finish(self, **settings: Any) -> tuple[int, str, str]:
        process = self.start(**settings)
        out, err = process.communicate(timeout=240)
        return process.returncode, out, err

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)

    @property
    def scenario(self) -> str:
        """The Reef scenario the run chose at its first start."""
        return resume.load(self.state_dir).scenario

    def committed(self) -> dict[str, Any]:
        data = json.loads((run_dir(self.state_dir) / COMMITTED_FILE).read_text())
        return canonical(data["archive"])


def canonical(archive: dict[str, Any]) -> dict[str, Any]:
    """The archive without what differs between two equal runs: Reef's receipt ids and the
    judge's submission ids (a resumed run submits its programs again)."""
    nodes = []
    for node in archive["nodes"]:
        entry = dict(node["entry"], metadata=None)
        verification = entry.get("verification")
        if verification and "receipt" in verification:
            receipt = {k: v for k, v in verification["receipt"].items() if k != "submission_id"}
            entry["verification"] = dict(verification, receipt=receipt)
        nodes.append(dict(node, entry=entry))
    return dict(archive, nodes=nodes)


def killing(script: Callable[[dict], Any], at: int, driver: Driver) -> Callable[[dict], Any]:
    """`script`, but the driver process is killed when request number `at` arrives."""
    return acting_at(at, driver.kill, script)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, reef_server, reef_upstream, judge_url) -> dict[str, Any]:
    """The committed archive of an uninterrupted run with the same scripts."""
    from support.openai_server import ScriptedOpenAIServer

    reef_upstream.script = PromptGuidance(SALT)
    with ScriptedOpenAIServer(PackerExecutor()) as executor:
        driver = Driver(
            tmp_path_factory.mktemp("reference"), reef_server, executor.base_url, judge_url
        )
        code, out, err = driver.finish()
        assert code == 0, err[-3000:]
        archive = driver.committed()
    assert archive["step"] == STEPS and archive["total_rollouts"] == GROUPS * ROLLOUTS * STEPS
    assert len(archive["nodes"]) > GROUPS  # the search made children
    return archive


def _reports(driver: Driver) -> list[dict[str, Any]]:
    records = driver.reef_server.records(driver.scenario, "report")
    return [driver.reef_server.record(driver.scenario, r["agent_record_id"]) for r in records]


def _check_reef(driver: Driver) -> int:
    """Exactly one report per slot, each against one recorded inference; the orphan count."""
    reports = _reports(driver)
    slots = [
        tuple(r["payload"]["metadata"][k] for k in ("step", "group", "rollout")) for r in reports
    ]
    assert len(slots) == GROUPS * ROLLOUTS * STEPS, slots
    assert len(set(slots)) == len(slots)  # no slot reported twice
    inferences = {
        r["agent_record_id"] for r in driver.reef_server.records(driver.scenario, "inference")
    }
    assert all(len(r["references"]) == 1 and r["references"][0] in inferences for r in reports)
    saved = json.loads((run_dir(driver.state_dir) / "resume-state.json").read_text())
    orphans = sum(len(s["orphans"]) for s in saved["summaries"])
    # Only guidance calls whose answer was lost were sent again.
    assert GROUPS * ROLLOUTS * STEPS <= len(inferences) <= GROUPS * ROLLOUTS * STEPS + orphans
    return orphans


@pytest.mark.parametrize(
    ("model", "at"),
    [
        ("guidance", 2),  # step 0: one guidance answer lost with the process (an orphan)
        ("executor", 3),  # a later step: receipts journaled, the executor's answer lost
        ("guidance", 5),  # just after a step's commit, as the next step samples
    ],
)
def test_a_killed_run_resumes_to_the_archive_of_an_unbroken_run(
    tmp_path, reference, reef_server, reset_reef_upstream, scripted_llm, judge_url, model, at
):
    driver = Driver(tmp_path, reef_server, scripted_llm.base_url, judge_url)
    guidance, executor = PromptGuidance(SALT), PackerExecutor()
    if model == "guidance":
        reset_reef_upstream.script = killing(guidance, at, driver)
        scripted_llm.script = executor
    else:
        reset_reef_upstream.script = guidance
        scripted_llm.script = killing(executor, at, driver)
    killed = driver.start()
    killed.communicate(timeout=240)
    assert killed.returncode == -signal.SIGKILL, "the kill point was never reached"

    reset_reef_upstream.script = guidance
    scripted_llm.script = executor
    code, out, err = driver.finish()
    assert code == 0, err[-3000:]
    assert driver.committed() == reference
    orphans = _check_reef(driver)
    if model == "guidance":
        assert orphans >= 1  # the answer the kill cut off is named in the step summary


def test_a_changed_group_count_on_resume_is_refused_in_one_line(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = PromptGuidance(SALT)
    scripted_llm.script = PackerExecutor()
    driver = Driver(tmp_path, reef_server, scripted_llm.base_url, judge_url)
    code, _, err = driver.finish(steps=1)
    assert code == 0, err[-3000:]
    before = len(reset_reef_upstream.chat_requests())
    code, _, err = driver.finish(steps=2, groups=2)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "cannot resume: groups changed from 1 to 2" in lines[0]
    assert len(reset_reef_upstream.chat_requests()) == before  # nothing was sampled
