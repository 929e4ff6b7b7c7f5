"""A cancelled agent (a Harbor timeout, Ctrl-C) stops its search at once, and a rerun finishes it.

The agent runs in an asyncio task as Harbor runs it, with every address and
key given only as Harbor's agent environment (`--ae`), against the real Reef,
the real judge and a scripted executor that stops answering after two calls.
Cancelling the task must abort the executor calls in flight, sample nothing
more, leave no search thread behind, and leave a journal from which the same
run resumes to completion.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
import time
from typing import Any

import pytest
from harbor.models.agent.context import AgentContext
from packers import CountingGuidance, PackerExecutor
from run_driver import run
from support.local_env import local_environment
from support.openai_server import NumberedScript, Reply
from support.processes import children_of

from atoll.core.environments.local import LocalEnvironment
from atoll.core.sandbox import reaper
from atoll.guidance_ttt.agent import GuidanceTTTAgent
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step
from atoll.judge.plugin import task_dir

pytest_plugins = ["support.fixtures"]
pytestmark = pytest.mark.timeout(180)

KEY = "sk-cancel-test-secret"
SECRET_VARIABLES = ("REEF_URL", "REEF_TOKEN", "FRONTIERCS_JUDGE_URL", "OPENAI_API_KEY")


class StallingExecutor(NumberedScript):
    """Answers the first `answered` calls; every later call hangs far longer than the test."""

    def __init__(self, answered: int) -> None:
        super().__init__()
        self.answered = answered
        self.inner = PackerExecutor()

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        reply = self.inner(request)
        return reply if number <= self.answered else dataclasses.replace(reply, delay_s=120.0)


def _environment(tmp_path) -> LocalEnvironment:
    """A real (never started) Harbor environment of the task: the agent reads where the task is."""
    return local_environment(
        tmp_path / "trial", task_dir("polyomino_packing") / "environment", "polyomino_packing"
    )


def _finished(state_dir) -> dict:
    path = step_journal_path(run_dir(state_dir), 0)
    return read_step(path, 0).finished if path.exists() else {}


def _judge_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "embedded-judge"}


def _search_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("step")]


def _settings(state_dir, executor_url: str) -> dict[str, Any]:
    return {
        "groups": 2,
        "rollouts": 2,
        "steps": 2,
        "training": "off",
        "executor": "openai",
        "executor_base_url": executor_url,
        "executor_model": "scripted-executor",
        "state_dir": str(state_dir),
    }


@pytest.mark.slow
def test_a_cancelled_agent_stops_its_embedded_judge_mid_judging(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm
):
    for name in SECRET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    reset_reef_upstream.script = CountingGuidance(malformed_every=0)
    scripted_llm.script = PackerExecutor()
    # The process's one sandbox watcher lives as long as the process, by design: start it
    # now, so that what the run leaves is measured whether or not a sandbox ran before.
    reaper.ensure_started()
    children_before = set(children_of(os.getpid()))
    judges_before = _judge_threads()  # another test's session judge may be serving
    harbor_env = {
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "OPENAI_API_KEY": KEY,
    }
    agent = GuidanceTTTAgent(
        tmp_path / "logs",
        model_name="scripted",
        extra_env=harbor_env,
        **_settings(tmp_path / "state", scripted_llm.base_url),
    )
    instruction = (task_dir("polyomino_packing") / "instruction.md").read_text()

    async def cancel_while_judging() -> float:
        search = asyncio.create_task(agent.run(instruction, _environment(tmp_path), AgentContext()))
        deadline = time.monotonic() + 90
        while not scripted_llm.chat_requests():  # the seed is judged; the first child is next
            assert not search.done(), search.exception()
            assert time.monotonic() < deadline, "the run never reached the executor"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        search.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await search
        return time.monotonic() - started

    stopped_in = asyncio.run(cancel_while_judging())
    # The stop waits for the case the judge is running (seconds), never for a held poll of
    # its result: the cancelled scorer's client cuts that off (about 2 s idle, 5-8 s on two
    # loaded cores; a poll's read left blocked made it one request timeout, 30 s).
    assert stopped_in < 30.0, f"the search took {stopped_in:.1f} s to stop"
    assert _search_threads() == []
    assert _judge_threads() <= judges_before
    assert set(children_of(os.getpid())) <= children_before


@pytest.mark.slow
def test_a_cancelled_agent_stops_at_once_and_a_rerun_finishes_the_run(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    for name in SECRET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    reset_reef_upstream.script = CountingGuidance(malformed_every=0)
    scripted_llm.script = StallingExecutor(answered=2)
    state_dir = tmp_path / "state"
    settings = _settings(state_dir, scripted_llm.base_url)
    harbor_env = {
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "FRONTIERCS_JUDGE_URL": judge_url,
        "OPENAI_API_KEY": KEY,
    }
    agent = GuidanceTTTAgent(
        tmp_path / "logs", model_name="scripted", extra_env=harbor_env, **settings
    )
    instruction = (task_dir("polyomino_packing") / "instruction.md").read_text()
    guidance_before = len(reset_reef_upstream.chat_requests())

    async def cancel_mid_step() -> float:
        search = asyncio.create_task(agent.run(instruction, _environment(tmp_path), AgentContext()))
        deadline = time.monotonic() + 90
        # Two rollouts judged and journaled, two executor calls hanging.
        while len(scripted_llm.chat_requests()) < 4 or len(_finished(state_dir)) < 2:
            assert not search.done(), search.exception()
            assert time.monotonic() < deadline, "the run never reached the stalled executor"
            await asyncio.sleep(0.05)
        search.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await search
        return time.monotonic() - started

    stopped_in = asyncio.run(cancel_mid_step())
    assert stopped_in < 30.0, f"the search took {stopped_in:.1f} s to stop"
    assert _search_threads() == []
    sampled = len(reset_reef_upstream.chat_requests()), len(scripted_llm.chat_requests())
    time.sleep(1.5)  # an openai retry backoff, had anything been left to retry
    assert (len(reset_reef_upstream.chat_requests()), len(scripted_llm.chat_requests())) == sampled
    assert sampled == (guidance_before + 4, 4)

    # The journal holds the two finished rollouts and the guidance of the two cut off.
    journal = read_step(step_journal_path(run_dir(state_dir), 0), 0)
    assert len(journal.finished) == 2 and len(journal.samples) == 4
    saved = resume.load(state_dir)
    assert saved is not None and saved.next_step == 0
    assert saved.scenario == f"guidance-ttt-{saved.run_id}"

    # The same run, rerun with a working executor, finishes from the journal.
    scripted_llm.script = PackerExecutor()
    result = run(
        {
            "task_dir": str(task_dir("polyomino_packing")),
            "reef_url": reef_server.url,
            "judge_url": judge_url,
            "settings": {**settings, "guidance_model": "scripted"},
        },
        {"REEF_TOKEN": reef_server.token, "OPENAI_API_KEY": KEY},
    )
    assert [s.step for s in result.summaries] == [0, 1]
    assert result.summaries[0].resumed_rollouts == 2
    assert result.summaries[0].orphans == []
    assert len(reset_reef_upstream.chat_requests()) == guidance_before + 8  # no slot resampled
    reports = reef_server.records(saved.scenario, "report")
    assert len(reports) == len({r["agent_record_id"] for r in reports}) == 8
    # Keys given through Harbor's agent environment are never written.
    for path in [*state_dir.rglob("*"), *(tmp_path / "logs").rglob("*")]:
        if path.is_file():
            text = path.read_text(errors="replace")
            assert KEY not in text and reef_server.token not in text, path
    assert json.loads((run_dir(state_dir) / "result.json").read_text())["steps"] == 2
