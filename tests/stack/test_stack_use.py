"""A second agent, from a third-party distribution, gets the Reef stack through its registration.

The distribution registers `reef-probe` (the probe agent of these tests) with
`StackUse("reef-stack", ...)` and a function that turns the agent's own
options into the stack's settings. `atoll run --agent reef-probe` then adds
the job plugin, and the stack starts from what that function made of the
agent's `--ak` and `--model`, with no `--pk` at all: the stack never names
the agent.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from harbor.models.job.config import JobConfig
from harbor.models.trial.config import AgentConfig
from stack_support import marked_processes
from support.distributions import install_plugin_distribution
from support.ports import free_port

from atoll.core.records import Kind, Registration, StackUse
from atoll.guidance_ttt.agent import stack_settings
from atoll.stack import health
from atoll.stack.config import StackConfig, from_agent, stack_config
from atoll.stack.errors import StackError
from atoll.stack.job_plugin import ReefStackPlugin
from atoll.stack.options import StackOptions
from atoll.stack.planning import plan

pytestmark = pytest.mark.timeout(300)

HERE = Path(__file__).parent
TASK = HERE / "tasks" / "reef-receipt"
LOCAL_ENV = "atoll.core.environments.local:LocalEnvironment"

HOOKS = """
from atoll.core import Kind, Registration, StackUse, hookimpl

@hookimpl
def atoll_agents():
    return [Registration(
        "reef-probe", Kind.AGENT, "reef_probe_agent:ReefProbeAgent", "One chat through Reef.",
        stack=StackUse("reef-stack", "probe_stack:stack_settings"),
    )]
"""

# The agent's own option names, which are not the stack's.
STACK_SETTINGS = """
def stack_settings(options, model_name):
    return {
        "training": "off",
        "state_dir": options["records"],
        "reef_url": options["reef"],
        "guidance_base_url": options["guide"],
        "guidance_model": model_name,
    }
"""


@pytest.mark.slow
def test_a_third_party_agent_declares_the_stack_and_hands_it_its_options(
    venv_bin, tmp_path, upstream, stack_env, mark
):
    site = install_plugin_distribution(
        tmp_path / "site",
        "atoll-reef-probe",
        {"probe_hooks": HOOKS, "probe_stack": STACK_SETTINGS},
        {"atoll": {"reef-probe": "probe_hooks"}},
    )
    port = free_port()
    for name in ("jobs", "roots", "home"):
        (tmp_path / name).mkdir()
    env = {k: v for k, v in stack_env.items() if k != "REEF_TOKEN"}  # the plugin makes one
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=f"{site}:{HERE}",
               ATOLL_LOCAL_ROOT=str(tmp_path / "roots"), HARBOR_TELEMETRY="0")  # fmt: skip
    argv = [
        str(venv_bin / "atoll"), "run", "-y", "--agent", "reef-probe", "--model", "guide",
        "-p", str(TASK), "--env", LOCAL_ENV, "-o", str(tmp_path / "jobs"),
        "--ak", f"records={tmp_path / 'probe-state'}", "--ak", f"reef=http://127.0.0.1:{port}",
        "--ak", f"guide={upstream.base_url}",
    ]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "atoll: added --plugin reef-stack (needed by reef-probe)" in done.stderr
    assert "reef-stack: search-only (training off)" in done.stderr
    (job_dir,) = [p.parent for p in (tmp_path / "jobs").glob("*/result.json")]
    (evals,) = json.loads((job_dir / "result.json").read_text())["stats"]["evals"].values()
    assert evals["n_errors"] == 0 and list(evals["reward_stats"]["reward"]) == ["1.0"]
    (receipt,) = job_dir.glob("*/agent/receipt.json")
    # Reef listened where the agent's `reef` option said, and proxied to its `guide` endpoint,
    assert json.loads(receipt.read_text())["reef_url"] == f"http://127.0.0.1:{port}"
    assert len(upstream.chat_requests()) == 1
    # and kept its records under the agent's `records` directory.
    assert (tmp_path / "probe-state" / "reef" / "agent-record").is_dir()
    assert marked_processes(mark) == []
    assert not health.healthy(f"http://127.0.0.1:{port}")


@pytest.mark.slow
def test_a_config_the_stack_cannot_use_is_one_line_naming_the_agent(
    venv_bin, tmp_path, stack_env, mark
):
    site = install_plugin_distribution(
        tmp_path / "site",
        "atoll-reef-probe",
        {
            "probe_hooks": HOOKS,
            "probe_stack": "def stack_settings(options, model_name):\n"
            "    return {'groups': options.get('groups', 0)}\n",
        },
        {"atoll": {"reef-probe": "probe_hooks"}},
    )
    (tmp_path / "roots").mkdir()
    env = {**stack_env, "HOME": str(tmp_path), "PYTHONPATH": f"{site}:{HERE}",
           "ATOLL_LOCAL_ROOT": str(tmp_path / "roots"), "HARBOR_TELEMETRY": "0"}  # fmt: skip
    argv = [
        str(venv_bin / "atoll"), "run", "-y", "--agent", "reef-probe", "-p", str(TASK),
        "--env", LOCAL_ENV, "-o", str(tmp_path / "jobs"), "--ak", "groups=0",
    ]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in output
    (line,) = [line for line in output.splitlines() if "reef-stack: error:" in line]
    assert line.startswith(
        "reef-stack: error: agent 'reef-probe' (atoll-reef-probe): setting 'groups': "
    )
    assert marked_processes(mark) == []


def _job(*agents: AgentConfig) -> SimpleNamespace:
    """What the plugin reads of Harbor's Job: its config's agents."""
    return SimpleNamespace(config=JobConfig(agents=list(agents)))


def test_guidance_ttt_hands_the_stack_its_own_reading_of_its_options(tmp_path):
    agent = AgentConfig(
        name="atoll.guidance_ttt.agent:GuidanceTTTAgent",
        kwargs={"g": "3", "state_dir": str(tmp_path / "state"), "reef_url": "http://127.0.0.1:9"},
        model_name="Qwen/Qwen3-0.6B",
    )
    config = ReefStackPlugin().config_for(_job(AgentConfig(name="oracle"), agent))
    # the agent's reading (alias g, --model as the guidance model), as the stack's config
    assert config == stack_config(stack_settings(agent.kwargs, agent.model_name))
    assert (config.groups, config.guidance_model) == (3, "Qwen/Qwen3-0.6B")
    assert config.reef_url == "http://127.0.0.1:9"
    # Guidance-TTT's default executor is served on this machine, with the gpt-oss parser.
    assert config.executor_served_locally
    assert config.executor_reasoning_parser == "gpt-oss"


def test_a_job_without_such_an_agent_gets_the_defaults_and_a_config_file_wins(tmp_path):
    defaults = ReefStackPlugin().config_for(_job(AgentConfig(name="oracle")))
    assert defaults == stack_config(stack_settings({}))  # the installed agent's defaults
    run_toml = tmp_path / "run.toml"
    run_toml.write_text('groups = 5\nexecutor_preset = "openrouter"\n')
    guidance = AgentConfig(name="guidance-ttt", kwargs={"groups": "3"})
    chosen = ReefStackPlugin(config=str(run_toml)).config_for(_job(guidance))
    assert chosen.groups == 5
    assert not chosen.executor_served_locally  # the agent read its own preset from the file
    assert chosen.executor_model == "z-ai/glm-5.2"


def test_a_config_file_the_agent_refuses_is_its_own_line(tmp_path):
    run_toml = tmp_path / "run.toml"
    run_toml.write_text("groups = 0\n")
    plugin = ReefStackPlugin(config=str(run_toml))
    with pytest.raises(StackError) as caught:
        plugin.config_for(_job(AgentConfig(name="oracle")))
    assert str(caught.value).startswith("setting 'groups': Input should be greater than or equal")


def test_a_config_function_must_return_the_stacks_config_or_its_settings():
    agent = Registration(
        "odd", Kind.AGENT, "m:A", "x", "atoll-odd", stack=StackUse("reef-stack", "m:settings")
    )
    assert from_agent(agent, {"groups": 2}).groups == 2
    assert from_agent(agent, StackConfig(groups=4)).groups == 4
    with pytest.raises(StackError, match=r"^agent 'odd' \(atoll-odd\): m:settings returned list, "):
        from_agent(agent, ["groups", 2])
    with pytest.raises(
        StackError, match=r"^agent 'odd' \(atoll-odd\): unknown setting 'executor_preset'; "
    ):
        from_agent(agent, {"executor_preset": "local"})  # an agent's own setting, not the stack's


def test_training_on_tinker_hands_the_stack_a_record_only_reef_in_front_of_the_policy(tmp_path):
    settings = {"training": "tinker", "tinker_policy_port": "31001", "state_dir": str(tmp_path)}
    config = stack_config(stack_settings(settings, "Qwen/Qwen3-8B"))
    # atoll trains through Tinker, so Reef only records: upstream mode, to the run's policy.
    assert config.training == "off"
    assert config.guidance_base_url == "http://127.0.0.1:31001/v1"
    assert plan(config, StackOptions()).upstream == ("http://127.0.0.1:31001", "Qwen/Qwen3-8B")
