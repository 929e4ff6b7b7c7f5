"""Whole runs: steps, the barrier, the archive commit, resume and its refusals."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from rich.console import Console
from support.guidance_run import ExecutorScript, GuidanceScript, seed_entry, write_task

from atoll.guidance_ttt import resume
from atoll.guidance_ttt.bridge import ReefTrainingBridge, SearchOnlyBridge, TrainingGateFailed
from atoll.guidance_ttt.config import ConfigError, IdentityChanged, load_config
from atoll.guidance_ttt.controller import TrainerOutOfStep, run
from atoll.guidance_ttt.executor import Executor, executor_spec
from atoll.guidance_ttt.guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.library import run_dir
from atoll.guidance_ttt.resume import RunName
from atoll.guidance_ttt.scorer import Scorer

pytest_plugins = ["support.fixtures"]


@pytest.fixture
def services(tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url):
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = ExecutorScript(variants=3)
    task = write_task(tmp_path / "task")
    name = RunName(uuid.uuid4().hex[:12], f"run-{uuid.uuid4().hex[:8]}")
    scenario = name.scenario
    return {
        "task": task,
        "name": name,
        "scenario": scenario,
        "guidance": GuidanceClient(
            ReefEndpoint(reef_server.url, reef_server.token),
            scenario=scenario,
            model="scripted",
            max_completion_tokens=128,
        ),
        "executor": Executor(
            executor_spec("gpt-oss-local", base_url=scripted_llm.base_url), environ={}
        ),
        "scorer": Scorer(judge_url, task.contract, deadline_s=120, poll_interval_s=0.05),
    }


def _config(tmp_path, **overrides):
    settings = {
        "groups": 2,
        "rollouts": 2,
        "steps": 2,
        "training": "off",
        "state_dir": str(tmp_path / "state"),
    }
    settings.update(overrides)
    return load_config(overrides=settings)


def _committed_step(tmp_path) -> int:
    path = run_dir(tmp_path / "state") / "committed-library.json"
    return json.loads(path.read_text())["archive"]["step"]


def _run(config, services, bridge=None, console=None):
    return run(
        config,
        services["task"],
        seed_entry(),
        guidance=services["guidance"],
        executor=services["executor"],
        scorer=services["scorer"],
        bridge=bridge or SearchOnlyBridge(),
        name=services["name"],
        console=console or Console(file=io.StringIO()),
    )


def test_search_only_run_commits_each_step_and_resumes_to_the_final_total(
    tmp_path, services, reef_server
):
    result = _run(_config(tmp_path), services)
    assert [s.step for s in result.summaries] == [0, 1]
    assert all(s.training == "search-only" for s in result.summaries)
    directory = run_dir(tmp_path / "state")
    assert _committed_step(tmp_path) == 2
    saved = resume.load(tmp_path / "state")
    assert saved is not None and saved.next_step == 2 and saved.training == "search-only"
    assert json.loads((directory / "result.json").read_text())["training"] == "search-only"
    assert "api_key" not in (directory / "resume-state.json").read_text().lower()

    # STEPS is the final total: asking for 3 runs exactly one more step.
    more = _run(_config(tmp_path, steps=3), services)
    assert [s.step for s in more.summaries] == [0, 1, 2]
    assert len(reef_server.records(services["scenario"], "report")) == 12


def test_resume_refuses_a_changed_identity_or_training_mode(tmp_path, services):
    _run(_config(tmp_path, steps=1), services)
    with pytest.raises(IdentityChanged, match="groups changed from 2 to 3") as refused:
        _run(_config(tmp_path, steps=2, groups=3), services)
    assert str(refused.value) == (
        f"cannot resume: groups changed from 2 to 3 in state dir {tmp_path / 'state'}; "
        "start a new state directory or restore the old settings"
    )
    with pytest.raises(ConfigError, match="search-only bridge exactly when training is 'off'"):
        _run(_config(tmp_path, steps=2, training="on"), services)


def test_a_failed_training_gate_leaves_the_archive_uncommitted(tmp_path, services, reef_server):
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("1")
    health = {
        "ok": True,
        "phase": "serving",
        "completed_train_steps": 1,
        "last_train_rollout_id": 0,
        "last_train_metrics": {
            "train/grad_norm": 0.0,  # no update happened
            "train/global_batch_size": 2,
            "train/lora_trainable_parameters": 10,
            "train/lora_base_trainable_parameters": 0,
            "train/lora_b_nonzero": 3,
            "train/lora_b_l1": 1.0,
        },
    }
    reads = {"n": 0}

    def status():
        # The first read is the start-of-run check (step 0); afterwards Reef has trained step 0.
        reads["n"] += 1
        step = 0 if reads["n"] == 1 else 1
        entry = {"scenario_step": step, "processor": {"failed_steps": []}}
        return {"error": None, "scenarios": {services["scenario"]: entry}}

    bridge = ReefTrainingBridge(
        status,
        services["scenario"],
        health=lambda: health,
        checkpoint_dir=tmp_path,
        poll_interval_s=0.01,
    )
    config = _config(tmp_path, steps=1, training="on")
    with pytest.raises(TrainingGateFailed, match="grad norm"):
        _run(config, services, bridge=bridge)
    assert _committed_step(tmp_path) == 0
    assert resume.load(tmp_path / "state").next_step == 0

    # Resuming finds Reef one step ahead of the archive with the open step complete: allowed,
    # and the gate is checked again rather than sampling the step afresh.
    health["last_train_metrics"]["train/grad_norm"] = 0.5
    reports = len(reef_server.records(services["scenario"], "report"))
    result = _run(config, services, bridge=bridge)
    assert result.summaries[0].training == "reef"
    assert result.summaries[0].grad_norm == 0.5
    assert result.summaries[0].resumed_rollouts == 4
    assert len(reef_server.records(services["scenario"], "report")) == reports == 4
    assert _committed_step(tmp_path) == 1


def test_a_trainer_at_another_step_is_refused(tmp_path, services):
    def status():
        return {
            "error": None,
            "scenarios": {services["scenario"]: {"scenario_step": 5, "processor": {}}},
        }

    bridge = ReefTrainingBridge(status, services["scenario"], health=dict)
    with pytest.raises(TrainerOutOfStep, match="completed 5 steps"):
        _run(_config(tmp_path, steps=1, training="on"), services, bridge=bridge)


def test_each_run_names_its_own_scenario_and_a_resume_keeps_it(tmp_path, services):
    first, second = resume.run_name(tmp_path / "a"), resume.run_name(tmp_path / "b")
    assert first.scenario == f"guidance-ttt-{first.run_id}"
    assert first.scenario != second.scenario  # two runs never share one training grid
    assert resume.run_name(tmp_path / "a") != first  # nothing is saved before the first start

    services = {**services, "name": None}  # the controller names a first start itself
    _run(_config(tmp_path, steps=1), services)
    saved = resume.load(tmp_path / "state")
    assert saved.scenario == f"guidance-ttt-{saved.run_id}"
    assert resume.run_name(tmp_path / "state") == RunName(saved.run_id, saved.scenario)
    # The saved name is what a resume must be built for; another one is refused, samples nothing.
    with pytest.raises(IdentityChanged, match="Reef scenario changed from 'guidance-ttt-"):
        _run(_config(tmp_path, steps=2), {**services, "name": RunName(saved.run_id, "other")})
    assert resume.load(tmp_path / "state").next_step == 1
