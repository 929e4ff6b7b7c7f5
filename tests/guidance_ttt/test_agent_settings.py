"""The agent's settings, clients and seed: what `--ak` and the environment turn into."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from harbor.models.agent.context import AgentContext

from atoll.guidance_ttt.agent import (
    GuidanceTTTAgent,
    TrainingUnavailable,
    agent_config,
    check_training_stack,
    with_reef_url,
)
from atoll.guidance_ttt.config import ConfigError
from atoll.guidance_ttt.contract import load_contract
from atoll.guidance_ttt.harbor.trial_outputs import fill_context
from atoll.guidance_ttt.search.seed import NO_SUMMARY, SeedError, read_seed
from atoll.guidance_ttt.state.run_report import RunReport
from atoll.judge.plugin import task_dir


def test_agent_kwargs_arrive_as_strings_and_use_the_short_executor_name(tmp_path):
    config = agent_config(
        {
            "groups": "3",
            "rollouts": "4",
            "steps": "5",
            "training": "off",
            "executor": "openai",
            "executor_base_url": "http://127.0.0.1:9/v1",
            "executor_model": "m",
            "state_dir": "relative/state",
        }
    )
    assert (config.groups, config.rollouts, config.steps) == (3, 4, 5)
    assert config.executor_preset == "openai" and config.training == "off"
    assert config.state_dir.is_absolute() and config.state_dir == Path.cwd() / "relative/state"


@pytest.mark.parametrize(
    ("alias", "preset"), [("local", "gpt-oss-local"), ("openrouter", "openrouter-glm")]
)
def test_the_documented_executor_aliases_are_accepted(alias, preset):
    assert agent_config({"executor": alias, "training": "off"}).executor_preset == preset


def test_harbor_model_names_the_guidance_model_unless_a_kwarg_does():
    assert agent_config({}, "Qwen/Qwen3-14B").guidance_model == "Qwen/Qwen3-14B"
    assert agent_config({"guidance_model": "a/b"}, "Qwen/Qwen3-14B").guidance_model == "a/b"


def test_a_bad_kwarg_fails_the_agent_at_construction_in_one_line(tmp_path):
    with pytest.raises(ConfigError) as error:
        GuidanceTTTAgent(logs_dir=tmp_path, groups="0")
    assert str(error.value) == (
        "setting 'groups': Input should be greater than or equal to 1 (got '0')"
    )
    with pytest.raises(ConfigError, match="unknown setting 'grups'"):
        GuidanceTTTAgent(logs_dir=tmp_path, grups="2")
    agent = GuidanceTTTAgent(logs_dir=tmp_path, groups="2", training="off")
    assert agent.name() == "guidance-ttt" and agent.config.groups == 2


def test_reef_comes_from_the_environment_unless_a_setting_names_it():
    environ = {"REEF_URL": "http://10.0.0.1:8900"}
    assert with_reef_url(agent_config({}), environ).reef_url == "http://10.0.0.1:8900"
    explicit = agent_config({"reef_url": "http://127.0.0.1:1"})
    assert with_reef_url(explicit, environ).reef_url == "http://127.0.0.1:1"
    assert with_reef_url(agent_config({}), {}).reef_url == agent_config({}).reef_url


def test_the_seed_is_the_tasks_reference_solution(tmp_path):
    real = task_dir("polyomino_packing")
    contract = load_contract(real / "contract.json")
    seed = read_seed(real, contract, None)
    assert "int main" in (seed.program or "") and seed.summary.startswith("Single-row packer")
    assert seed.verification is None  # unscored unless a scorer is given

    (tmp_path / "solution").mkdir()
    with pytest.raises(SeedError, match="solution.cpp: missing"):
        read_seed(tmp_path, contract, None)
    (tmp_path / "solution" / "solution.cpp").write_text("int main() { return 0; }\n")
    assert read_seed(tmp_path, contract, None).summary == NO_SUMMARY


def test_the_context_names_the_training_mode_and_the_receipts():
    context = AgentContext(metadata={"kept": True})
    fill_context(context, RunReport("r1", "guidance-ttt", "search-only", {}))
    assert context.metadata == {
        "kept": True,
        "run_id": "r1",
        "reef_scenario": "guidance-ttt",
        "training": "search-only",
        "steps": 0,
        "best_raw_score": None,
        "seed_raw_score": None,
        "reef_receipts": [],
        "guidance_completion_tokens": 0,
        "executor_completion_tokens": 0,
    }
    assert context.n_output_tokens == 0


def test_training_on_without_ray_fails_before_any_sample(monkeypatch):
    check_training_stack(agent_config({"training": "off"}))
    monkeypatch.setitem(sys.modules, "ray", None)  # a machine without the extra: no spec of ray
    with pytest.raises(TrainingUnavailable, match="--ak training=off"):
        check_training_stack(agent_config({"training": "on"}))
