"""What runs where: the trainer's and the executor's GPUs, the checkout, an existing Ray cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from stack_support import guidance_stack_config

from atoll.stack.commands import executor_command, executor_wanted, reef_command
from atoll.stack.options import StackOptions
from atoll.stack.planning import plan


def _checkout(tmp_path: Path) -> Path:
    home = tmp_path / "reef"
    (home / "recipes" / "tttd").mkdir(parents=True)
    (home / "recipes" / "tttd" / "recipe.py").write_text("")
    return home


def _env(venv_bin: Path, **extra: str) -> dict[str, str]:
    return {"PATH": f"{venv_bin}:/usr/bin:/bin", "PYTHONPATH": "/opt/extra", **extra}


def test_training_runs_reef_from_the_checkout_on_gpus_0_and_1(tmp_path, venv_bin):
    home = _checkout(tmp_path)
    planned = plan(
        guidance_stack_config({"state_dir": str(tmp_path / "s")}), StackOptions(training=True)
    )
    command = reef_command(planned, _env(venv_bin, REEF_HOME=str(home)), tmp_path / "serve.yaml")
    assert command.argv == (str(venv_bin / "reef"), "serve", "-c", str(tmp_path / "serve.yaml"))
    assert command.cwd == home
    assert command.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert command.env["PYTHONPATH"] == f"{home}:/opt/extra"
    assert "RAY_ADDRESS" not in command.env  # Reef starts (and stops) its own Ray


def test_an_existing_ray_cluster_is_passed_through(tmp_path, venv_bin):
    home = _checkout(tmp_path)
    planned = plan(
        guidance_stack_config({"state_dir": str(tmp_path / "s")}),
        StackOptions(training=True, reef_home=str(home), trainer_gpus="4,5,6,7"),
    )
    command = reef_command(
        planned, _env(venv_bin, RAY_ADDRESS="10.0.0.5:6379"), tmp_path / "serve.yaml"
    )
    assert command.env["RAY_ADDRESS"] == "10.0.0.5:6379"
    assert command.env["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert "num-gpus: 4" in planned.serve_yaml


def test_search_only_runs_reef_in_upstream_mode_without_gpus(tmp_path, venv_bin):
    planned = plan(
        guidance_stack_config(
            {"state_dir": str(tmp_path / "s"), "guidance_model": "Qwen/Qwen3-0.6B"}
        ),
        StackOptions(training=False, upstream_url="http://127.0.0.1:7001/v1/"),
    )
    command = reef_command(planned, _env(venv_bin), tmp_path / "serve.yaml")
    assert command.argv[-4:] == (
        "--inference.upstream-url", "http://127.0.0.1:7001",
        "--inference.upstream-model", "Qwen/Qwen3-0.6B",
    )  # fmt: skip
    assert "CUDA_VISIBLE_DEVICES" not in command.env
    assert not executor_wanted(planned)


@pytest.mark.parametrize("preset", ["gpt-oss-local", "local"])
def test_the_local_executor_serves_gpt_oss_on_gpu_2_at_the_configured_url(
    tmp_path, venv_bin, preset
):
    config = guidance_stack_config({"state_dir": str(tmp_path / "s"), "executor_preset": preset})
    planned = plan(config, StackOptions(training=True))
    assert executor_wanted(planned)
    command = executor_command(planned, _env(venv_bin))
    assert command.argv[:3] == (sys.executable, "-m", "sglang.launch_server")
    args = dict(zip(command.argv[3::2], command.argv[4::2], strict=True))
    assert args == {
        "--model-path": "openai/gpt-oss-120b",
        "--served-model-name": "openai/gpt-oss-120b",
        "--host": "127.0.0.1",
        "--port": "8000",  # the reference's executor port; 30000 is Reef's router
        "--tp": "1",
        "--reasoning-parser": "gpt-oss",  # as the method's launch command
    }
    assert command.env["CUDA_VISIBLE_DEVICES"] == "2"


def test_a_remote_executor_preset_starts_no_server(tmp_path):
    config = guidance_stack_config(
        {"state_dir": str(tmp_path / "s"), "executor_preset": "openrouter-glm"}
    )
    assert not executor_wanted(plan(config, StackOptions(training=True)))
    assert executor_wanted(plan(config, StackOptions(training=True, executor_server="on")))


def test_a_checkout_without_the_tttd_recipe_class_is_refused_before_the_gpus_are_taken(
    tmp_path, venv_bin
):
    """Reef's own Python imports the method's recipe and hooks with the checkout, or says why not."""
    from atoll.stack import preflight
    from atoll.stack.errors import StackError

    home = _checkout(tmp_path)  # recipes/tttd/recipe.py is there, but defines no TTTDRecipe
    env = _env(venv_bin, REEF_HOME=str(home))
    with pytest.raises(StackError) as refused:
        preflight.method_importable(preflight.reef_executable(env), home, env)
    message = str(refused.value)
    assert "cannot import the method's recipe and hooks" in message
    assert "TTTDRecipe" in message and "install atoll-guidance-ttt[reef]" in message
    assert "\n" not in message
