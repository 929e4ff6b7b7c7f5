"""A run started from its config alone: Reef from the config, executor key and judge from the environment."""

from __future__ import annotations

import io
import threading
import time
import uuid

import pytest
from rich.console import Console
from support.guidance_run import ExecutorScript, GuidanceScript, seed_entry, write_task

from atoll.core.reef_runtime import RayRuntime
from atoll.guidance_ttt.config import load_config
from atoll.guidance_ttt.search.controller import run
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled
from atoll.guidance_ttt.services.executor import ExecutorConfigError
from atoll.guidance_ttt.services.training_barrier import (
    RayActorHealth,
    ReefTrainingBarrier,
    SearchOnlyBarrier,
)
from atoll.guidance_ttt.services.wiring import BARRIER_POLL_S, ReefRuntimeMissing, open_services
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.resume import RunName
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]


@pytest.mark.slow
def test_a_configured_run_reaches_every_service(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = ExecutorScript(variants=2)
    monkeypatch.setenv("REEF_TOKEN", reef_server.token)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wiring-secret")
    monkeypatch.setenv("FRONTIERCS_JUDGE_URL", judge_url)
    config = load_config(
        overrides={
            "g": 1,
            "r": 2,
            "steps": 1,
            "training": "off",
            "state_dir": str(tmp_path / "state"),
            "reef_url": reef_server.url,
            "executor_preset": "openai",
            "executor_base_url": scripted_llm.base_url,
            "executor_model": "exec-model",
        }
    )
    task = write_task(tmp_path / "task")
    name = RunName(uuid.uuid4().hex[:12], f"wired-{uuid.uuid4().hex[:8]}")
    scenario = name.scenario
    output = io.StringIO()
    with open_services(config, task, scenario=scenario) as services:
        assert isinstance(services.barrier, SearchOnlyBarrier)
        result = run(
            config,
            task,
            seed_entry(),
            guidance=services.guidance,
            executor=services.executor,
            scorer=services.scorer,
            barrier=services.barrier,
            name=name,
            console=Console(file=output, force_terminal=True, width=120),
        )
    assert result.summaries[0].sampled == 2
    assert "step 0: " in output.getvalue() and "training search-only" in output.getvalue()
    assert scripted_llm.chat_requests()[0].body["model"] == "exec-model"
    assert len(reef_server.records(scenario, "report")) == 2
    for path in run_dir(tmp_path / "state").rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "sk-wiring-secret" not in text and reef_server.token not in text


def _reef_runtime_file(run_dir, address: str = "10.1.2.3:6379") -> None:
    """A training Reef's runtime file for its driver, as `reef serve` writes it."""
    driver = run_dir / "slime-driver"
    driver.mkdir(parents=True)
    (driver / "runtime.yaml").write_text(
        f"reef:\n  ray_address: {address}\n  ray_namespace: reef-ns\n"
        "  ray_actor_name: bridge-actor\n  token: not-read-here\n"
    )


@pytest.mark.slow
def test_training_on_selects_reefs_barrier_and_a_missing_key_is_one_clear_error(
    tmp_path, monkeypatch, reef_server, judge_url
):
    monkeypatch.setenv("FRONTIERCS_JUDGE_URL", judge_url)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("REEF_RUN_DIR", raising=False)
    task = write_task(tmp_path / "task")
    base = {"state_dir": str(tmp_path / "state"), "reef_url": reef_server.url}
    config = load_config(overrides=base)
    # Where `atoll stack up` puts Reef's run directory for this run.
    _reef_runtime_file(tmp_path / "state" / "stack" / "reef-run")
    with open_services(config, task, scenario="s", reef_token=reef_server.token) as services:
        assert isinstance(services.barrier, ReefTrainingBarrier)
        assert services.barrier.trainer_step() == 0
        health = services.barrier._health
        assert isinstance(health, RayActorHealth)
        assert health.runtime == RayRuntime("10.1.2.3:6379", "reef-ns", "bridge-actor")
    config = load_config(overrides={**base, "executor_preset": "openrouter-glm"})
    with (
        pytest.raises(ExecutorConfigError, match="OPENROUTER_API_KEY"),
        open_services(config, task, scenario="s"),
    ):
        pass


@pytest.mark.slow
def test_training_reads_the_ray_cluster_from_the_runtime_file_reef_run_dir_names(
    tmp_path, reef_server, judge_url
):
    task = write_task(tmp_path / "task")
    config = load_config(overrides={"state_dir": str(tmp_path / "state")})
    environ = {
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "FRONTIERCS_JUDGE_URL": judge_url,
        "REEF_RUN_DIR": str(tmp_path / "job" / "reef-stack" / "reef-run"),
    }
    with (
        pytest.raises(ReefRuntimeMissing) as missing,
        open_services(config, task, scenario="s", environ=environ),
    ):
        pass
    assert str(missing.value).startswith(
        "training=on reads the Ray cluster of Reef's trainer from Reef's runtime files, and "
        f"{tmp_path / 'job' / 'reef-stack' / 'reef-run'} has none"
    )
    _reef_runtime_file(tmp_path / "job" / "reef-stack" / "reef-run", "10.9.9.9:6380")
    with open_services(config, task, scenario="s", environ=environ) as services:
        assert services.barrier._health.runtime.address == "10.9.9.9:6380"


@pytest.mark.slow
def test_services_read_the_environment_they_are_given_not_the_process_one(
    tmp_path, monkeypatch, reef_server, judge_url
):
    """Harbor's `--ae` variables reach the agent only as its extra env, never in os.environ."""
    for name in ("REEF_URL", "REEF_TOKEN", "FRONTIERCS_JUDGE_URL", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    environ = {
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "FRONTIERCS_JUDGE_URL": judge_url,
        "OPENROUTER_API_KEY": "sk-from-harbor",
    }
    config = load_config(
        overrides={
            "state_dir": str(tmp_path / "state"),
            "executor_preset": "openrouter-glm",
            "training": "off",
        }
    )
    task = write_task(tmp_path / "task")
    with open_services(config, task, scenario="env", environ=environ) as services:
        assert services.guidance.endpoint.url == reef_server.url
        assert services.guidance.status()["error"] is None  # Reef accepted the token
        assert services.scorer.candidates.url == judge_url  # the judge scorer the contract names
        assert "sk-from-harbor" not in repr(services.executor)
    # The process environment is not consulted: the same settings without the key fail.
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-process")
    without_key = {k: v for k, v in environ.items() if k != "OPENROUTER_API_KEY"}
    with (
        pytest.raises(ExecutorConfigError, match="OPENROUTER_API_KEY"),
        open_services(config, task, scenario="env", environ=without_key),
    ):
        pass


@pytest.mark.slow
def test_a_run_cancelled_at_the_training_barrier_stops_within_one_poll(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    """Reef never trains this scenario; cancelling the waiting run ends it, uncommitted."""
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = ExecutorScript(variants=2)
    config = load_config(
        overrides={
            "g": 1,
            "r": 2,
            "steps": 1,
            "training": "on",
            "state_dir": str(tmp_path / "state"),
            "executor_base_url": scripted_llm.base_url,
        }
    )
    environ = {"REEF_TOKEN": reef_server.token, "FRONTIERCS_JUDGE_URL": judge_url}
    _reef_runtime_file(tmp_path / "state" / "stack" / "reef-run")
    task = write_task(tmp_path / "task")
    name = resume.RunName(uuid.uuid4().hex[:12], f"barrier-{uuid.uuid4().hex[:8]}")
    cancellation = Cancellation()
    cancelled_at: list[float] = []

    journal = step_journal_path(run_dir(tmp_path / "state"), 0)

    def cancel_once_reported() -> None:
        deadline = time.monotonic() + 60
        while not journal.exists() or len(read_step(journal, 0).acknowledged) < 2:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        time.sleep(0.5)  # the run is now polling Reef's status at the barrier
        cancelled_at.append(time.monotonic())
        cancellation.cancel()

    canceller = threading.Thread(target=cancel_once_reported)
    canceller.start()
    config = config.model_copy(update={"reef_url": reef_server.url})
    with (
        open_services(
            config, task, scenario=name.scenario, environ=environ, cancellation=cancellation
        ) as services,
        pytest.raises(RunCancelled),
    ):
        # The wired barrier, with the Ray actor's health standing in for a trainer that never
        # trains (Ray needs the GPU stack).
        assert isinstance(services.barrier, ReefTrainingBarrier)
        services.barrier._health = lambda: {
            "ok": True,
            "phase": "serving",
            "completed_train_steps": 0,
        }
        run(
            config,
            task,
            seed_entry(),
            guidance=services.guidance,
            executor=services.executor,
            scorer=services.scorer,
            barrier=services.barrier,
            name=name,
            cancellation=cancellation,
            console=Console(file=io.StringIO()),
        )
    stopped = time.monotonic()
    canceller.join()
    # One poll and a margin for a busy machine; the barrier itself would wait for minutes.
    assert cancelled_at and stopped - cancelled_at[0] < BARRIER_POLL_S + 8.0
    saved = resume.load(tmp_path / "state")
    assert saved.next_step == 0  # nothing committed: a rerun re-checks the gate of step 0
    state = read_step(journal, 0)
    assert len(state.finished) == len(state.acknowledged) == 2
    assert len(reef_server.records(name.scenario, "report")) == 2
