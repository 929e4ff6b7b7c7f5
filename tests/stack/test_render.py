"""serve.yaml rendered from the config Guidance-TTT hands the stack, checked field by field and by Reef's loader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stack_support import guidance_stack_config

from atoll.core import reef_runtime
from atoll.core.reef_runtime import trainer_checkpoint_dir, trainer_hf_dir
from atoll.stack import validate
from atoll.stack.config import StackConfig
from atoll.stack.errors import StackError
from atoll.stack.options import StackOptions
from atoll.stack.planning import plan

#: A weight-training recipe the reef-infra wheel ships, standing in for the tttd recipe (which
#: extends the Reef checkout's) so that Reef's full resolution checks every other section.
WHEEL_TRAINING_RECIPE = validate.WHEEL_TRAINING_RECIPE

CONFIGS = [
    {},
    {"groups": 2, "rollouts": 4, "steps": 3, "lora_rank": 16, "sequence_length": 4096,
     "max_guidance_tokens": 1024, "guidance_model": "Qwen/Qwen3-0.6B", "reef_url": "http://127.0.0.1:9123"},
    {"groups": 8, "rollouts": 16, "steps": 30, "tensor_parallel_size": 2, "sequence_length": 12288},
]  # fmt: skip


def _render(tmp_path: Path, overrides: dict, **options) -> tuple[StackConfig, dict, Path]:
    config = guidance_stack_config({"state_dir": str(tmp_path / "state"), **overrides})
    planned = plan(config, StackOptions(stack_dir=tmp_path / "stack", **options))
    path = tmp_path / "serve.yaml"
    path.write_text(planned.serve_yaml)
    return config, yaml.safe_load(path.read_text()), path


@pytest.mark.slow
@pytest.mark.parametrize("overrides", CONFIGS, ids=["defaults", "small", "tp2"])
def test_training_file_follows_the_config_field_by_field(tmp_path: Path, overrides: dict) -> None:
    config, doc, path = _render(tmp_path, overrides, training=True)
    g, r = config.groups, config.rollouts
    port = int(config.reef_url.rsplit(":", 1)[1])
    assert doc["reef"] == {
        "host": "127.0.0.1",
        "port": port,
        "token": "${REEF_TOKEN:?}",
        "run-dir": str(tmp_path / "stack" / "reef-run"),
        "ready-timeout": 3600,
    }
    inference = doc["inference"]
    assert inference["model-path"] == config.guidance_model
    assert inference["tensor-parallel-size"] == config.tensor_parallel_size
    assert inference["num-gpus"] == 2
    assert inference["options"]["context-length"] == str(config.sequence_length)
    assert doc["recipe"]["implementation"] == "atoll.guidance_ttt.tttd.recipe:TttdRecipe"
    assert doc["recipe"]["config"]["groups-per-step"] == g
    assert doc["recipe"]["config"]["rollouts-per-group"] == r
    training = doc["training"]
    assert training["backend"] == "slime"
    assert training["colocate"] is True
    assert training["config"]["steps"] == config.steps
    assert training["config"]["lora_rank"] == config.lora_rank
    assert training["config"]["seq_length"] == config.sequence_length
    assert training["config"]["max_tokens"] == config.max_guidance_tokens
    assert training["config"]["tensor_parallel_size"] == config.tensor_parallel_size
    opts = training["options"]
    expected = {
        "hf-checkpoint": config.guidance_model,
        "num-rollout": str(config.steps),
        "rollout-batch-size": str(g),
        "n-samples-per-prompt": str(r),
        "global-batch-size": str(g * r),
        "actor-num-gpus-per-node": "2",
        "tensor-model-parallel-size": str(config.tensor_parallel_size),
        "seq-length": str(config.sequence_length),
        "rollout-max-response-len": str(config.max_guidance_tokens),
        "rollout-max-context-len": str(config.sequence_length),
        "megatron-lora-rank": str(config.lora_rank),
        "megatron-lora-alpha": "32",
        "megatron-lora-target-modules": ["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"],
        "optimizer": "adam",
        "lr": "4e-5",
        "lr-decay-style": "constant",
        "weight-decay": "0",
        "adam-beta1": "0.9",
        "adam-beta2": "0.95",
        "clip-grad": "0",
        "use-rollout-logprobs": True,
        "kl-coef": "0.1",
    }
    assert {key: opts[key] for key in expected} == expected
    state = tmp_path / "state" / "reef"
    assert doc["storage"] == {
        "artifact-repository": str(state / "artifacts.git"),
        "artifact-work-dir": str(state / "artifact-work"),
        "artifact-cache-dir": str(state / "artifact-cache"),
        "agent-record-dir": str(state / "agent-record"),
    }
    assert training["config"]["checkpoint_dir"] == str(state / "checkpoints")
    assert doc["execution"] == {"training": "ray", "rollout": "ray"}

    # Reef's own loader: the public layout, then the full resolution `reef serve` runs.
    validate.load_layout(path)
    resolved = validate.resolve(path, recipe=WHEEL_TRAINING_RECIPE)
    reef = resolved["reef"]
    assert reef["training_backend"] == "slime"
    assert reef["model_path"] == config.guidance_model
    assert reef["tensor_parallel_size"] == config.tensor_parallel_size
    assert reef["training_backend_options"]["global-batch-size"] == str(g * r)
    assert [s["name"] for s in resolved["services"]] == ["slime-driver", "reef"]


@pytest.mark.slow
@pytest.mark.parametrize("overrides", CONFIGS[:2], ids=["defaults", "small"])
def test_search_only_file_is_record_only_and_loads(tmp_path: Path, overrides: dict) -> None:
    config, doc, path = _render(
        tmp_path, overrides, training=False, upstream_url="http://127.0.0.1:9/v1", port=9555
    )
    assert set(doc) == {"reef", "storage"}
    assert doc["reef"]["port"] == 9555
    assert "# search-only" in path.read_text()
    resolved = validate.resolve(path, upstream=("http://127.0.0.1:9", config.guidance_model))
    assert resolved["reef"]["recipe"] == "recipe"
    assert resolved["reef"]["upstream_url"] == "http://127.0.0.1:9"
    assert resolved["reef"]["upstream_model"] == config.guidance_model
    assert resolved["reef"]["agent_record_dir"] == str(tmp_path / "state" / "reef" / "agent-record")


@pytest.mark.slow
def test_reef_loader_rejects_a_field_it_does_not_know(tmp_path: Path) -> None:
    _, doc, path = _render(tmp_path, {}, training=True)
    doc["training"]["lora-rank"] = 32
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(StackError, match="unknown config fields: training.lora-rank"):
        validate.load_layout(path)


def test_tensor_parallel_size_must_divide_the_trainer_gpus(tmp_path: Path) -> None:
    with pytest.raises(
        StackError, match="tensor_parallel_size 4 does not divide the 2 trainer GPUs"
    ):
        _render(tmp_path, {"tensor_parallel_size": 4}, training=True)


@pytest.mark.slow
def test_render_command_prints_the_file_without_the_token(tmp_path: Path) -> None:
    token = "secret-" + os.urandom(8).hex()
    result = subprocess.run(
        [sys.executable, "-m", "atoll.core.cli", "stack", "render", "groups=3", "rollouts=5",
         "--config", str(_toml(tmp_path)), "--check"],
        capture_output=True, text=True, env={**{k: v for k, v in os.environ.items() if k != "REEF_HOME"}, "REEF_TOKEN": token}, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = yaml.safe_load(result.stdout)
    assert doc["recipe"]["config"] == {
        "groups-per-step": 3,
        "rollouts-per-group": 5,
        "checkpoint-every-n-versions": 1,
    }
    assert doc["training"]["options"]["num-rollout"] == "7"
    assert token not in result.stdout
    assert "reef-infra's loader accepts this file (resolved with a wheel recipe" in result.stderr
    assert "the Slime driver's checks pass" in result.stderr


def test_render_command_bad_override_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "atoll.core.cli", "stack", "render", "groups=zero"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "setting 'groups'" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _toml(tmp_path: Path) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(f'steps = 7\nstate_dir = "{tmp_path / "state"}"\n')
    return path


def test_the_training_gate_reads_where_the_rendered_stack_writes(tmp_path: Path) -> None:
    """The trainer's job marker, its checkpoints, its Ray actor and Reef's run dir: one place each."""
    config = guidance_stack_config({"state_dir": str(tmp_path / "state")})
    planned = plan(config, StackOptions(training=True))  # `atoll stack up`'s own stack dir
    doc = yaml.safe_load(planned.serve_yaml)
    state_dir = config.state_dir.resolve()
    options = doc["training"]["options"]
    assert Path(options["save-hf"]).parent == trainer_hf_dir(state_dir)
    assert Path(options["save"]) == trainer_checkpoint_dir(state_dir)
    assert doc["training"]["ray-namespace"] == reef_runtime.DEFAULT_NAMESPACE
    assert doc["training"]["ray-actor-name"] == reef_runtime.DEFAULT_ACTOR
    assert Path(doc["reef"]["run-dir"]) == reef_runtime.run_dir(state_dir, {})
    named = reef_runtime.run_dir(state_dir, {"REEF_RUN_DIR": str(tmp_path / "job-run")})
    assert named == tmp_path / "job-run"


def test_a_sub_second_ready_timeout_is_one_second_in_the_file(tmp_path: Path) -> None:
    """Reef refuses a readiness deadline of 0; atoll's own sub-second deadline stays atoll's."""
    _, doc, _ = _render(tmp_path, {}, training=True, ready_timeout_s=0.5)
    assert doc["reef"]["ready-timeout"] == 1
    assert doc["training"]["ready-timeout"] == 1
