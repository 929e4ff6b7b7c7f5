"""The rendered training stack against the reference serve.yaml, key by key, and Reef's own checks of it.

The reference is the public Reef repository's Guidance-TTT example,
`recipes/tttd/examples/guidance_ttt/serve.yaml` (Human-Agent-Society/reef,
commit 0d50298b7486241503db30d009abcccbecc25d57, the public-layout version).
`REFERENCE` records every key it sets with its value, `${...}` references
expanded against the file itself; comments and the layout are not recorded.
The run settings below are the reference's deployment inputs (G=2, R=4, one
step, 8192 guidance tokens, 12288 context, LoRA rank 32, tensor parallel 2 on
2 GPUs, Reef on port 8900), so every value the reference derives from them
must come out equal, and every key that does not is in `DIFFERENT` with why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from stack_support import guidance_stack_config

from atoll.guidance_ttt.tttd import names
from atoll.stack import render as render_module
from atoll.stack import validate
from atoll.stack.errors import StackError
from atoll.stack.options import StackOptions
from atoll.stack.planning import plan

REFERENCE_SETTINGS = {
    "groups": 2,
    "rollouts": 4,
    "steps": 1,
    "max_guidance_tokens": 8192,
    "sequence_length": 12288,
    "lora_rank": 32,
    "tensor_parallel_size": 2,
    "reef_url": "http://127.0.0.1:8900",
}

_T = "training.options."
REFERENCE: dict[str, Any] = {
    "schema-version": 2,
    "reef.host": "127.0.0.1",
    "reef.port": 8900,
    "reef.token": "reef-local",
    "reef.run-dir": "work/polyomino_packing/stack",
    "reef.ready-timeout": 120,
    "inference.num-gpus": "2",
    "inference.tensor-parallel-size": "1",
    "inference.options.context-length": "12288",
    "inference.options.router-port": "30000",
    "inference.options.mem-fraction-static": "0.5",
    "inference.options.disable-prefill-cuda-graph": True,
    "inference.options.cuda-graph-max-bs-decode": "8",
    "inference.model-path": "work/model",
    "inference.timeout-s": 7200,
    "inference.backend-factory": "reef.train.slime_backend.reef_adapters.sglang.chat.SGLangChatTrainingInferenceBackend",
    "recipe.implementation": "recipes.tttd.recipe:TTTDRecipe",
    "recipe.config.groups-per-step": 2,
    "recipe.config.rollouts-per-group": 4,
    "recipe.config.checkpoint-every-n-versions": 2,
    "training.backend": "slime",
    "training.ready-timeout": 3600,
    "training.ray-namespace": "reef",
    "training.ray-actor-name": "reef-train-bridge",
    "training.timeout-s": 7200,
    "training.config.num_gpus": 2,
    "training.config.steps": 1,
    "training.config.max_tokens": 8192,
    "training.config.seq_length": 12288,
    "training.config.lora_rank": 32,
    "training.config.tensor_parallel_size": 2,
    "training.config.checkpoint_dir": "work/polyomino_packing/checkpoints",
    _T + "hf-checkpoint": "work/model",
    _T + "load": "work/polyomino_packing/checkpoints/megatron",
    _T + "ref-load": "work/model",
    _T + "save": "work/polyomino_packing/checkpoints/megatron",
    _T + "save-hf": "work/polyomino_packing/checkpoints/hf/{rollout_id}",
    _T + "save-interval": "2",
    _T + "megatron-to-hf-mode": "bridge",
    _T + "num-rollout": "1",
    _T + "rollout-batch-size": "2",
    _T + "n-samples-per-prompt": "4",
    _T + "global-batch-size": "8",
    _T + "disable-rollout-global-dataset": True,
    _T + "actor-num-nodes": "1",
    _T + "actor-num-gpus-per-node": "2",
    _T + "num-gpus-per-node": "2",
    _T + "colocate": True,
    _T + "tensor-model-parallel-size": "2",
    _T + "pipeline-model-parallel-size": "1",
    _T + "context-parallel-size": "1",
    _T + "expert-model-parallel-size": "1",
    _T + "expert-tensor-parallel-size": "1",
    _T + "padded-vocab-size": "151936",
    _T + "position-embedding-type": "rope",
    _T + "rotary-base": "1000000",
    _T + "swiglu": True,
    _T + "disable-bias-linear": True,
    _T + "normalization": "RMSNorm",
    _T + "group-query-attention": True,
    _T + "qk-layernorm": True,
    _T + "seq-length": "12288",
    _T + "use-dynamic-batch-size": True,
    _T + "max-tokens-per-gpu": "12288",
    _T + "recompute-granularity": "full",
    _T + "recompute-method": "uniform",
    _T + "recompute-num-layers": "1",
    _T + "megatron-lora-rank": "32",
    _T + "megatron-lora-alpha": "32",
    _T + "megatron-lora-dropout": "0",
    _T + "megatron-lora-target-modules": ["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"],
    _T + "check-lora-weight-equal": True,
    _T + "verify-lora-base-weights": True,
    _T + "optimizer": "adam",
    _T + "lr": "4e-5",
    _T + "lr-decay-style": "constant",
    _T + "override-opt-param-scheduler": True,
    _T + "weight-decay": "0",
    _T + "adam-beta1": "0.9",
    _T + "adam-beta2": "0.95",
    _T + "adam-eps": "1e-8",
    _T + "clip-grad": "0",
    _T + "loss-type": "custom_loss",
    _T + "custom-loss-function-path": "recipes.tttd.slime.objective.tttd_loss",
    _T + "use-rollout-logprobs": True,
    _T + "advantage-estimator": "grpo",
    _T + "kl-coef": "0.1",
    _T + "custom-advantage-function-path": "recipes.tttd.slime.objective.tttd_advantages",
    _T + "entropy-coef": "0",
    _T + "rollout-temperature": "1",
    _T + "rollout-max-response-len": "8192",
    _T + "rollout-max-context-len": "12288",
    _T + "train-env-vars": '{"PYTORCH_CUDA_ALLOC_CONF":"max_split_size_mb:512"}',
    _T + "log-probs-chunk-size": "1024",
    _T + "attention-dropout": "0",
    _T + "hidden-dropout": "0",
    _T + "accumulate-allreduce-grads-in-fp32": True,
    _T + "attention-softmax-in-fp32": True,
    _T + "attention-backend": "flash",
    "storage.artifact-repository": "work/polyomino_packing/artifacts.git",
    "storage.artifact-work-dir": "work/polyomino_packing/artifact-work",
    "storage.artifact-cache-dir": "work/polyomino_packing/artifact-cache",
    "storage.agent-record-dir": "work/polyomino_packing/agent-record",
    "execution.training": "ray",
    "execution.rollout": "ray",
    "observability.wandb.enabled": False,
    "observability.wandb.project": "reef",
    "observability.wandb.tags": [],
    "observability.wandb.mode": "online",
    "observability.wandb.directory": "work/polyomino_packing/wandb",
    "observability.wandb.upload_checkpoints": False,
}

_LOCATION = "a location: atoll keeps every file of a run under its state and stack directories"
_MODEL = "atoll names the run's guidance model (a Hugging Face id or a directory), not a pre-downloaded copy"
_HOOKS = "atoll's own objective (atoll.guidance_ttt.tttd), which the reef-infra wheel lacks"
_TRACKING = (
    "not rendered: Reef tracks nothing when the section is omitted, which is the reference's "
    "`enabled: false`; a run's record is atoll's own report"
)
_EVERY_STEP = (
    "a checkpoint every step: the run controller waits for each step's durable commit, "
    "and a resumed run needs every step's weights"
)

#: Reference keys atoll renders otherwise or not at all, each with its reason.
DIFFERENT: dict[str, str] = {
    "schema-version": "not rendered: reef-infra 0.1.3's loader refuses the section",
    "reef.token": "a ${REEF_TOKEN:?} reference: a token written in the file would be a secret on disk",
    "reef.run-dir": _LOCATION,
    "reef.ready-timeout": "Reef's readiness wait covers the trainer's start here (the stack's --ready-timeout)",
    "inference.tensor-parallel-size": "one tensor_parallel_size serves and trains (the run config's)",
    "inference.model-path": _MODEL,
    "inference.backend-factory": (
        "the spelling of reef-infra before 0.1.3; 0.1.3 names the request handler "
        "inference.handler-factory (rendered)"
    ),
    "recipe.implementation": "Reef's tttd recipe bound to atoll's objective: " + _HOOKS,
    "recipe.config.checkpoint-every-n-versions": _EVERY_STEP,
    "training.config.checkpoint_dir": _LOCATION,
    _T + "hf-checkpoint": _MODEL,
    _T + "ref-load": _MODEL,
    _T + "load": _LOCATION,
    _T + "save": _LOCATION,
    _T + "save-hf": _LOCATION,
    _T + "save-interval": _EVERY_STEP,
    _T + "colocate": "reef-infra 0.1.3 refuses it among the options; rendered as training.colocate",
    _T + "custom-loss-function-path": _HOOKS,
    _T + "custom-advantage-function-path": _HOOKS,
    "storage.artifact-repository": _LOCATION,
    "storage.artifact-work-dir": _LOCATION,
    "storage.artifact-cache-dir": _LOCATION,
    "storage.agent-record-dir": _LOCATION,
    **{key: _TRACKING for key in REFERENCE if key.startswith("observability.")},
}

#: Keys atoll renders that the reference does not set, each with its reason.
ADDED: dict[str, str] = {
    "inference.handler-factory": "reef-infra 0.1.3's name for the reference's backend factory",
    "training.colocate": "reef-infra 0.1.3's place for the reference's colocate option",
}


def _flatten(document: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if isinstance(value, dict) and value and not key.endswith("env-vars"):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _same(left: Any, right: Any) -> bool:
    """Equal as Reef reads them: its options are strings on the command line either way."""
    if isinstance(left, bool) or isinstance(right, bool) or isinstance(left, list):
        return left == right
    return str(left) == str(right)


def _render_reference_run(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    config = guidance_stack_config({"state_dir": str(tmp_path / "state"), **REFERENCE_SETTINGS})
    planned = plan(config, StackOptions(stack_dir=tmp_path / "stack", training=True))
    path = tmp_path / "serve.yaml"
    path.write_text(planned.serve_yaml)
    return yaml.safe_load(path.read_text()), path


def test_every_reference_key_is_rendered_alike_or_differs_for_a_stated_reason(
    tmp_path: Path,
) -> None:
    document, _ = _render_reference_run(tmp_path)
    rendered = _flatten(document)
    unexplained = {
        key: (expected, rendered.get(key, "<absent>"))
        for key, expected in REFERENCE.items()
        if key not in DIFFERENT and not (key in rendered and _same(rendered[key], expected))
    }
    assert unexplained == {}
    # An allowed difference that is no longer one is stale: the list says only what is true.
    stale = [key for key in DIFFERENT if key in rendered and _same(rendered[key], REFERENCE[key])]
    assert stale == []
    extra = sorted(set(rendered) - set(REFERENCE) - set(ADDED))
    assert extra == []
    assert set(ADDED) <= set(rendered)


def test_the_rendered_paths_name_the_method_package() -> None:
    assert render_module.TTTD_RECIPE == names.RECIPE
    assert render_module.LOSS_HOOK == names.LOSS_HOOK
    assert render_module.ADVANTAGE_HOOK == names.ADVANTAGE_HOOK
    assert render_module.LOSS_FAMILY == names.LOSS_FAMILY
    assert names.OBJECTIVE.partition(":")[0] == render_module.OBJECTIVE_MODULE


@pytest.mark.slow
def test_reef_resolves_the_file_and_its_slime_driver_checks_pass(tmp_path: Path) -> None:
    _, path = _render_reference_run(tmp_path)
    validate.load_layout(path)
    resolved = validate.resolve(path, recipe=validate.WHEEL_TRAINING_RECIPE)
    assert resolved["reef"]["inference_handler_factory"] == render_module.HANDLER_FACTORY
    arguments = validate.check_method(resolved)
    assert arguments.loss_type == "custom_loss"
    assert arguments.kl_coef == 0.1
    assert arguments.custom_advantage_function_path == names.ADVANTAGE_HOOK
    assert arguments.sglang_router_port == render_module.ROUTER_PORT
    assert arguments.global_batch_size == 8


def _resolved_with(tmp_path: Path, change: dict[str, Any]) -> dict[str, Any]:
    document, path = _render_reference_run(tmp_path)
    options = document["training"]["options"]
    for key, value in change.items():
        if value is None:
            options.pop(key)
        else:
            options[key] = value
    path.write_text(yaml.safe_dump(document))
    return validate.resolve(path, recipe=validate.WHEEL_TRAINING_RECIPE)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"loss-type": "policy_loss"}, "requires --loss-type custom_loss, got 'policy_loss'"),
        ({"custom-loss-function-path": None}, "requires --custom-loss-function-path"),
        ({"custom-advantage-function-path": "elsewhere.hook"}, "got 'elsewhere.hook'"),
        ({"use-rollout-logprobs": None}, "requires --use-rollout-logprobs"),
        ({"kl-coef": "0"}, "requires a finite --kl-coef > 0, got 0"),
        ({"disable-compute-advantages-and-returns": True}, "needs Slime's advantage pass"),
    ],
    ids=[
        "loss-type",
        "no-loss-hook",
        "other-advantage-hook",
        "no-rollout-logprobs",
        "kl-zero",
        "no-advantage-pass",
    ],
)
def test_the_slime_driver_checks_refuse_another_objective(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    resolved = _resolved_with(tmp_path, change)
    with pytest.raises(StackError, match="Reef's Slime driver would refuse this file") as refused:
        validate.check_method(resolved)
    assert reason in str(refused.value)


def test_reef_router_and_a_local_executor_cannot_share_a_port(tmp_path: Path) -> None:
    settings = {"state_dir": str(tmp_path / "s"), "executor_base_url": "http://127.0.0.1:30000/v1"}
    with pytest.raises(
        StackError, match="Reef's SGLang router and the executor would both listen on port 30000"
    ):
        plan(guidance_stack_config(settings), StackOptions(training=True)).serve_yaml  # noqa: B018
    # A search-only stack starts no router, so the executor may keep that port.
    search = {**settings, "guidance_base_url": "http://127.0.0.1:9/v1"}
    assert "reef:" in plan(guidance_stack_config(search), StackOptions(training=False)).serve_yaml


def test_reef_and_a_local_executor_cannot_share_a_port(tmp_path: Path) -> None:
    settings = {
        "state_dir": str(tmp_path / "s"),
        "executor_base_url": "http://localhost:8900/v1",
        "reef_url": "http://127.0.0.1:8900",
    }
    with pytest.raises(StackError, match="Reef and the executor would both listen on port 8900"):
        plan(guidance_stack_config(settings), StackOptions(training=True)).serve_yaml  # noqa: B018


def test_the_local_executor_preset_keeps_off_the_router_port(tmp_path: Path) -> None:
    config = guidance_stack_config(
        {"state_dir": str(tmp_path / "s"), "executor_preset": "gpt-oss-local"}
    )
    ports = render_module.local_ports(
        config, plan(config, StackOptions(training=True)).placement, training=True
    )
    assert len({port for _, port in ports}) == len(ports) == 3
