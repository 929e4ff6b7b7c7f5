"""A run started from its config alone: Reef from the config, executor key and judge from the environment."""

from __future__ import annotations

import io
import uuid

import pytest
from rich.console import Console
from support.guidance_run import ExecutorScript, GuidanceScript, seed_entry, write_task

from atoll.guidance_ttt.bridge import ReefTrainingBridge, SearchOnlyBridge
from atoll.guidance_ttt.config import load_config
from atoll.guidance_ttt.controller import run
from atoll.guidance_ttt.executor import ExecutorConfigError
from atoll.guidance_ttt.library import run_dir
from atoll.guidance_ttt.resume import RunName
from atoll.guidance_ttt.wiring import open_services

pytest_plugins = ["support.fixtures"]


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
        assert isinstance(services.bridge, SearchOnlyBridge)
        result = run(
            config,
            task,
            seed_entry(),
            guidance=services.guidance,
            executor=services.executor,
            scorer=services.scorer,
            bridge=services.bridge,
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


def test_training_on_selects_reefs_bridge_and_a_missing_key_is_one_clear_error(
    tmp_path, monkeypatch, reef_server, judge_url
):
    monkeypatch.setenv("FRONTIERCS_JUDGE_URL", judge_url)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    task = write_task(tmp_path / "task")
    base = {"state_dir": str(tmp_path / "state"), "reef_url": reef_server.url}
    config = load_config(overrides=base)
    with open_services(config, task, scenario="s", reef_token=reef_server.token) as services:
        assert isinstance(services.bridge, ReefTrainingBridge)
        assert services.bridge.trainer_step() == 0
    config = load_config(overrides={**base, "executor_preset": "openrouter-glm"})
    with (
        pytest.raises(ExecutorConfigError, match="OPENROUTER_API_KEY"),
        open_services(config, task, scenario="s"),
    ):
        pass
