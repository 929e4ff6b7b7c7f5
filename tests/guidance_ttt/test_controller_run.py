"""Whole runs: steps, the barrier, the archive commit, resume and its refusals."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from rich.console import Console
from support.guidance_run import (
    ExecutorScript,
    GuidanceScript,
    judge_scorer,
    new_library,
    seed_entry,
    write_task,
)
from trainer_sim import SimulatedTrainer

from atoll.guidance_ttt.config import ConfigError, IdentityChanged, load_config
from atoll.guidance_ttt.search.controller import RunAlreadyComplete, TrainerOutOfStep, run
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled
from atoll.guidance_ttt.services.executor import Executor, executor_spec
from atoll.guidance_ttt.services.reef_guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.services.training_barrier import (
    ReefTrainingBarrier,
    SearchOnlyBarrier,
    TrainingGateFailed,
)
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.durable_archive import LibraryError
from atoll.guidance_ttt.state.resume import RunName
from atoll.guidance_ttt.state.run_dir import run_dir

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
        "scorer": judge_scorer(judge_url, task.contract, deadline_s=120, poll_interval_s=0.05),
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


def _run(config, services, barrier=None, console=None):
    return run(
        config,
        services["task"],
        seed_entry(),
        guidance=services["guidance"],
        executor=services["executor"],
        scorer=services["scorer"],
        barrier=barrier or SearchOnlyBarrier(),
        name=services["name"],
        console=console or Console(file=io.StringIO()),
    )


@pytest.mark.slow
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


@pytest.mark.slow
def test_resume_refuses_a_changed_identity_or_training_mode(tmp_path, services):
    _run(_config(tmp_path, steps=1), services)
    with pytest.raises(IdentityChanged, match="groups changed from 2 to 3") as refused:
        _run(_config(tmp_path, steps=2, groups=3), services)
    assert str(refused.value) == (
        f"cannot resume: groups changed from 2 to 3 in state dir {tmp_path / 'state'}; "
        "start a new state directory or restore the old settings"
    )
    with pytest.raises(ConfigError, match="search-only barrier exactly when training is 'off'"):
        _run(_config(tmp_path, steps=2, training="on"), services)


def _trainer(tmp_path, services, reef_server) -> SimulatedTrainer:
    return SimulatedTrainer(reef_server, services["scenario"], tmp_path / "state", 2, 2)


def _barrier(trainer: SimulatedTrainer, **kwargs) -> ReefTrainingBarrier:
    return ReefTrainingBarrier(
        trainer.status,
        trainer.scenario,
        health=trainer.health,
        checkpoint_marker=trainer.checkpoint_marker,
        poll_interval_s=0.01,
        **kwargs,
    )


@pytest.mark.slow
def test_a_resumed_training_run_counts_the_steps_its_restarted_trainer_made(
    tmp_path, services, reef_server
):
    trainer = _trainer(tmp_path, services, reef_server)
    first = _run(_config(tmp_path, steps=1, training="on"), services, barrier=_barrier(trainer))
    assert [s.training for s in first.summaries] == ["reef"]
    assert trainer.health()["completed_train_steps"] == 1

    # The resumed job starts a new Reef: its actor has completed no step yet.
    trainer.restart()
    more = _run(_config(tmp_path, steps=3, training="on"), services, barrier=_barrier(trainer))
    assert [s.step for s in more.summaries] == [0, 1, 2]
    assert [s.grad_norm for s in more.summaries] == [0.42, 0.42, 0.42]
    assert trainer.health()["completed_train_steps"] == 2 and trainer.trained == 3
    assert _committed_step(tmp_path) == 3


@pytest.mark.slow
def test_a_failed_training_gate_leaves_the_archive_uncommitted(tmp_path, services, reef_server):
    trainer = _trainer(tmp_path, services, reef_server)
    trainer.metrics["train/grad_norm"] = 0.0  # the optimizer made no update
    config = _config(tmp_path, steps=1, training="on")
    with pytest.raises(TrainingGateFailed, match="grad norm"):
        _run(config, services, barrier=_barrier(trainer))
    assert _committed_step(tmp_path) == 0
    assert resume.load(tmp_path / "state").next_step == 0
    # The same update is refused again on resume; nothing is sampled afresh.
    reports = len(reef_server.records(services["scenario"], "report"))
    with pytest.raises(TrainingGateFailed, match="grad norm"):
        _run(config, services, barrier=_barrier(trainer))
    assert len(reef_server.records(services["scenario"], "report")) == reports == 4
    assert _committed_step(tmp_path) == 0


def _stop_once_reef_trained(config, services, trainer: SimulatedTrainer) -> None:
    """Run until Reef has trained step 0 and is still loading the adapter; then stop the run."""
    trainer.serving_delay_reads = 1
    cancellation = Cancellation()
    trainer.on_train = lambda step: cancellation.cancel()
    with pytest.raises(RunCancelled):
        run(
            config,
            services["task"],
            seed_entry(),
            guidance=services["guidance"],
            executor=services["executor"],
            scorer=services["scorer"],
            barrier=_barrier(trainer, cancellation=cancellation),
            name=services["name"],
            cancellation=cancellation,
            console=Console(file=io.StringIO()),
        )
    trainer.on_train = None


@pytest.mark.slow
@pytest.mark.parametrize("restarted", [False, True], ids=["same-reef", "restarted-reef"])
def test_a_run_stopped_after_reef_trained_its_step_resumes_and_commits_that_step(
    tmp_path, services, reef_server, restarted
):
    trainer = _trainer(tmp_path, services, reef_server)
    config = _config(tmp_path, steps=2, training="on")
    _stop_once_reef_trained(config, services, trainer)
    assert trainer.trained == 1 and _committed_step(tmp_path) == 0
    if restarted:
        trainer.restart()
    reports = len(reef_server.records(services["scenario"], "report"))
    result = _run(config, services, barrier=_barrier(trainer, job_marker=trainer.job_marker))
    # Step 0 is checked (from the same trainer's report, or its durable job marker), not
    # sampled again; step 1 is trained by the trainer that runs now.
    assert [s.step for s in result.summaries] == [0, 1]
    assert result.summaries[0].resumed_rollouts == 4
    assert result.summaries[0].grad_norm == 0.42
    assert len(reef_server.records(services["scenario"], "report")) == reports + 4 == 8
    assert trainer.trained == 2 and _committed_step(tmp_path) == 2


@pytest.mark.slow
def test_a_trainer_ahead_whose_update_cannot_be_verified_is_refused(
    tmp_path, services, reef_server
):
    trainer = _trainer(tmp_path, services, reef_server)
    config = _config(tmp_path, steps=1, training="on")
    _stop_once_reef_trained(config, services, trainer)
    trainer.restart()
    trainer.job_marker.write_text(json.dumps({"status": "UPDATING_WEIGHTS", "rollout_id": 0}))
    with pytest.raises(TrainingGateFailed, match="not a committed update"):
        _run(config, services, barrier=_barrier(trainer, job_marker=trainer.job_marker))
    assert _committed_step(tmp_path) == 0


@pytest.mark.slow
def test_a_trainer_at_another_step_is_refused(tmp_path, services):
    def status():
        return {
            "error": None,
            "scenarios": {services["scenario"]: {"scenario_step": 5, "processor": {}}},
        }

    barrier = ReefTrainingBarrier(status, services["scenario"], health=dict)
    with pytest.raises(TrainerOutOfStep, match="completed 5 steps"):
        _run(_config(tmp_path, steps=1, training="on"), services, barrier=barrier)


@pytest.mark.slow
def test_steps_equal_to_the_steps_done_hands_in_the_committed_best_without_a_model_call(
    tmp_path, services, reef_server, reset_reef_upstream, scripted_llm
):
    first = _run(_config(tmp_path, steps=2), services)
    reports = len(reef_server.records(services["scenario"], "report"))
    guided, executed = len(reset_reef_upstream.chat_requests()), len(scripted_llm.chat_requests())
    committed = json.loads((run_dir(tmp_path / "state") / "committed-library.json").read_text())
    output = io.StringIO()
    again = _run(_config(tmp_path, steps=2), services, console=Console(file=output))
    assert again.best is not None and first.best is not None
    assert again.best.id == committed["archive"]["best_id"] == first.best.id
    assert again.best.entry.program == first.best.entry.program
    assert [s.step for s in again.summaries] == [0, 1]
    assert "has already completed its 2 steps; handing in its committed best" in output.getvalue()
    assert len(reset_reef_upstream.chat_requests()) == guided
    assert len(scripted_llm.chat_requests()) == executed
    assert len(reef_server.records(services["scenario"], "report")) == reports
    assert resume.load(tmp_path / "state").next_step == 2


@pytest.mark.slow
def test_a_run_killed_between_its_last_commit_and_its_resume_state_hands_in_its_best(
    tmp_path, services, reset_reef_upstream, scripted_llm
):
    first = _run(_config(tmp_path, steps=2), services)
    # What a kill between the last archive commit and the resume state's update leaves.
    saved = resume.load(tmp_path / "state")
    saved.next_step, saved.summaries = 1, saved.summaries[:1]
    resume.save(tmp_path / "state", saved)
    guided, executed = len(reset_reef_upstream.chat_requests()), len(scripted_llm.chat_requests())
    again = _run(_config(tmp_path, steps=2), services)
    assert again.best is not None and first.best is not None and again.best.id == first.best.id
    assert [s.step for s in again.summaries] == [0, 1]
    assert len(reset_reef_upstream.chat_requests()) == guided
    assert len(scripted_llm.chat_requests()) == executed
    assert resume.load(tmp_path / "state").next_step == 2


@pytest.mark.slow
def test_steps_below_the_steps_done_is_an_error_not_a_silent_success(
    tmp_path, services, reef_server
):
    _run(_config(tmp_path, steps=2), services)
    reports = len(reef_server.records(services["scenario"], "report"))
    with pytest.raises(RunAlreadyComplete) as refused:
        _run(_config(tmp_path, steps=1), services)
    assert str(refused.value) == (
        f"the run in {tmp_path / 'state'} has already completed 2 steps, and "
        "steps=1 is the final total, not an increment: pass steps=2 to hand in its best "
        "program again, or steps=3 or more to continue it"
    )
    assert len(reef_server.records(services["scenario"], "report")) == reports
    assert resume.load(tmp_path / "state").next_step == 2


@pytest.mark.slow
def test_a_first_start_stopped_before_its_resume_state_is_started_again(
    tmp_path, services, reef_server, task
):
    # What a kill between the archive's first write and the resume state's leaves.
    state_dir = tmp_path / "state"
    new_library(state_dir, services["task"], groups=2).close()
    assert (run_dir(state_dir) / "library.json").exists()
    assert resume.load(state_dir) is None
    output = io.StringIO()
    result = _run(_config(tmp_path, steps=1), services, console=Console(file=output))
    assert [s.step for s in result.summaries] == [0]
    assert "stopped before it saved its resume state; starting it again" in output.getvalue()
    assert resume.load(state_dir).next_step == 1


@pytest.mark.slow
def test_an_archive_with_steps_but_no_resume_state_is_never_removed(tmp_path, services):
    _run(_config(tmp_path, steps=1), services)
    state_dir = tmp_path / "state"
    resume.resume_path(state_dir).unlink()
    committed = (run_dir(state_dir) / "committed-library.json").read_bytes()
    with pytest.raises(LibraryError, match="no resume state"):
        _run(_config(tmp_path, steps=2), services)
    assert (run_dir(state_dir) / "committed-library.json").read_bytes() == committed


@pytest.mark.slow
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
