"""Reef's `serve.yaml`, rendered from the stack's config.

The grid (G groups × R rollouts), the step count, the sequence limits, the
LoRA rank, the tensor-parallel size and the guidance model are read from the
`StackConfig` the run's agent hands over and nowhere else, so the stack and
the agent cannot disagree about the step they run. What is fixed here is
the training method itself (LoRA alpha and targets, the optimizer, the KL
coefficient), which is not a knob of a run.

The layout is reef-infra's public configuration layout (sections `reef`,
`inference`, `recipe`, `training`, `storage`, `execution`); Reef's own loader
accepts it (`atoll.stack.validate`). The bearer token is never written: the
file says `${REEF_TOKEN:?}`, which Reef expands from its environment and
refuses to start without.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from atoll.core import reef_env
from atoll.core.reef_runtime import (
    DEFAULT_ACTOR,
    DEFAULT_NAMESPACE,
    RUN_SUBDIR,
    reef_state_dir,
    trainer_checkpoint_dir,
    trainer_checkpoints_root,
    trainer_hf_dir,
)
from atoll.stack.config import StackConfig
from atoll.stack.errors import StackError

TOKEN_REFERENCE = "${" + reef_env.TOKEN_ENV + ":?}"
#: Reef's tttd recipe bound to atoll's objective (atoll-guidance-ttt's `atoll.guidance_ttt.tttd`,
#: installed with reef-infra where the stack runs; `atoll.guidance_ttt.tttd.names` says the same).
TTTD_RECIPE = "atoll.guidance_ttt.tttd.recipe:TttdRecipe"
#: The recipe's training objective, which names the Slime loss family (registered on import).
OBJECTIVE_MODULE = "atoll.guidance_ttt.tttd.objective"
LOSS_FAMILY = "atoll_tttd"
#: The worker hooks Slime calls for the method's loss and its KL-to-base advantage term.
LOSS_HOOK = "atoll.guidance_ttt.tttd.slime.objective.tttd_loss"
ADVANTAGE_HOOK = "atoll.guidance_ttt.tttd.slime.objective.tttd_advantages"
#: Reef's request handler for a managed SGLang engine: token ids and log-probs for every sample.
HANDLER_FACTORY = "reef.inference.sglang.chat.SGLangInferenceHandler"
#: The port of Reef's SGLang router, as the reference gives it.
ROUTER_PORT = 30000
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
#: The record-only recipe of reef-infra: receipts and reports, no weight updates.
RECORD_ONLY_RECIPE = "recipe"
#: Reef's own run directory (service logs, resolved configuration) inside the stack directory
#: is `RUN_SUBDIR`, where the agent's training gate reads the trainer's Ray cluster.

#: The training method of the tttd recipe (not per-run knobs).
LORA_ALPHA = 32
LORA_TARGETS = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")
LEARNING_RATE = "4e-5"
KL_COEF = "0.1"

#: The optimizer, the loss and the sampling temperature of the method, in Slime's option names.
TRAINING_METHOD: dict[str, Any] = {
    "optimizer": "adam",
    "lr": LEARNING_RATE,
    "lr-decay-style": "constant",
    "override-opt-param-scheduler": True,
    "weight-decay": "0",
    "adam-beta1": "0.9",
    "adam-beta2": "0.95",
    "adam-eps": "1e-8",
    "clip-grad": "0",
    "loss-type": "custom_loss",
    "custom-loss-function-path": LOSS_HOOK,
    "use-rollout-logprobs": True,
    "advantage-estimator": "grpo",
    "kl-coef": KL_COEF,
    "custom-advantage-function-path": ADVANTAGE_HOOK,
    "entropy-coef": "0",
    "rollout-temperature": "1",
}

#: Numerics and memory of the trainer, fixed for the method.
NUMERICS: dict[str, Any] = {
    "train-env-vars": '{"PYTORCH_CUDA_ALLOC_CONF":"max_split_size_mb:512"}',
    "log-probs-chunk-size": "1024",
    "attention-dropout": "0",
    "hidden-dropout": "0",
    "accumulate-allreduce-grads-in-fp32": True,
    "attention-softmax-in-fp32": True,
    "attention-backend": "flash",
}

#: Megatron's description of the Qwen3 family (the default guidance models).
QWEN3_ARCHITECTURE: dict[str, Any] = {
    "padded-vocab-size": "151936",
    "position-embedding-type": "rope",
    "rotary-base": "1000000",
    "swiglu": True,
    "disable-bias-linear": True,
    "normalization": "RMSNorm",
    "group-query-attention": True,
    "qk-layernorm": True,
}


@dataclass(frozen=True)
class Placement:
    """Where the stack runs: Reef's address, its directories and the trainer's GPUs."""

    host: str
    port: int
    stack_dir: Path
    state_dir: Path
    trainer_gpu_count: int
    ready_timeout_s: float

    @property
    def run_dir(self) -> Path:
        """Reef's own service logs (under the stack directory, i.e. the job's)."""
        return self.stack_dir / RUN_SUBDIR

    @property
    def reef_state_dir(self) -> Path:
        """Reef's durable storage (under the run's state directory)."""
        return reef_state_dir(self.state_dir)


def reef_address(config: StackConfig, port: int | None) -> tuple[str, int]:
    """Host and port of Reef: the config's `reef_url`, with `port` replacing its port."""
    parts = urlsplit(config.reef_url)
    if parts.scheme != "http" or not parts.hostname:
        raise StackError(
            f"reef_url {config.reef_url!r} must be an http:// URL of this machine, e.g. {reef_env.DEFAULT_URL}"
        )
    return parts.hostname, port or parts.port or 80


def render(config: StackConfig, placement: Placement, *, training: bool) -> dict[str, Any]:
    """The serve.yaml mapping: the tttd stack when training, else record-only."""
    refuse_shared_ports(config, placement, training=training)
    document: dict[str, Any] = {
        "reef": {
            "host": placement.host,
            "port": placement.port,
            "token": TOKEN_REFERENCE,
            "run-dir": str(placement.run_dir),
            "ready-timeout": _whole_seconds(placement.ready_timeout_s),
        },
    }
    if training:
        document.update(_training_sections(config, placement))
    document["storage"] = _storage(placement)
    if training:
        document["execution"] = {"training": "ray", "rollout": "ray"}
    return document


def local_ports(
    config: StackConfig, placement: Placement, *, training: bool
) -> list[tuple[str, int]]:
    """The services of this machine the run talks to, and the port each listens on."""
    ports = [("Reef", placement.port)]
    if training:
        ports.append(("Reef's SGLang router", ROUTER_PORT))
    executor = urlsplit(config.executor_base_url or "")
    if executor.hostname in LOOPBACK_HOSTS:
        default = 443 if executor.scheme == "https" else 80
        ports.append(("the executor", executor.port or default))
    return ports


def refuse_shared_ports(config: StackConfig, placement: Placement, *, training: bool) -> None:
    """Two services on one port: the second could not start, or would answer for the first."""
    owners: dict[int, str] = {}
    for name, port in local_ports(config, placement, training=training):
        if port in owners:
            raise StackError(
                f"{owners[port]} and {name} would both listen on port {port}: move one of them "
                "(reef_url's port or --port for Reef, executor_base_url for the executor)"
            )
        owners[port] = name


def _whole_seconds(seconds: float) -> int:
    """Reef's readiness deadline in whole seconds, at least one: Reef refuses a deadline of 0.

    atoll keeps its own deadline exact (a sub-second `--ready-timeout` is
    atoll's to enforce); the file only must not make Reef refuse to start.
    """
    return max(1, math.ceil(seconds))


def _storage(placement: Placement) -> dict[str, str]:
    base = placement.reef_state_dir
    return {
        "artifact-repository": str(base / "artifacts.git"),
        "artifact-work-dir": str(base / "artifact-work"),
        "artifact-cache-dir": str(base / "artifact-cache"),
        "agent-record-dir": str(base / "agent-record"),
    }


def _training_sections(config: StackConfig, placement: Placement) -> dict[str, Any]:
    gpus = placement.trainer_gpu_count
    tp = config.tensor_parallel_size
    if gpus < 1 or gpus % tp:
        raise StackError(
            f"tensor_parallel_size {tp} does not divide the {gpus} trainer GPUs; "
            "change tensor_parallel_size or the trainer GPUs"
        )
    context = config.sequence_length
    return {
        "inference": {
            "model-path": config.guidance_model,
            "num-gpus": gpus,
            "tensor-parallel-size": tp,
            "timeout-s": 7200,
            "handler-factory": HANDLER_FACTORY,
            "options": {
                "context-length": str(context),
                "router-port": str(ROUTER_PORT),
                "mem-fraction-static": "0.5",
                "disable-prefill-cuda-graph": True,
                "cuda-graph-max-bs-decode": "8",
            },
        },
        "recipe": {
            "implementation": TTTD_RECIPE,
            "config": {
                "groups-per-step": config.groups,
                "rollouts-per-group": config.rollouts,
                "checkpoint-every-n-versions": 1,
            },
        },
        "training": {
            "backend": "slime",
            "colocate": True,
            "ready-timeout": _whole_seconds(placement.ready_timeout_s),
            "ray-namespace": DEFAULT_NAMESPACE,
            "ray-actor-name": DEFAULT_ACTOR,
            "timeout-s": 7200,
            "config": {
                "num_gpus": gpus,
                "steps": config.steps,
                "max_tokens": config.max_guidance_tokens,
                "seq_length": context,
                "lora_rank": config.lora_rank,
                "tensor_parallel_size": tp,
                "checkpoint_dir": str(trainer_checkpoints_root(placement.state_dir)),
            },
            "options": _trainer_options(config, placement),
        },
    }


def _trainer_options(config: StackConfig, placement: Placement) -> dict[str, Any]:
    """Slime/Megatron's command-line options: the run's shape, then the fixed training method."""
    gpus = placement.trainer_gpu_count
    context = config.sequence_length
    return {
        "hf-checkpoint": config.guidance_model,
        "ref-load": config.guidance_model,
        "load": str(trainer_checkpoint_dir(placement.state_dir)),
        "save": str(trainer_checkpoint_dir(placement.state_dir)),
        "save-hf": str(trainer_hf_dir(placement.state_dir) / "{rollout_id}"),
        "save-interval": "1",
        "megatron-to-hf-mode": "bridge",
        "num-rollout": str(config.steps),
        "rollout-batch-size": str(config.groups),
        "n-samples-per-prompt": str(config.rollouts),
        "global-batch-size": str(config.groups * config.rollouts),
        "disable-rollout-global-dataset": True,
        "actor-num-nodes": "1",
        "actor-num-gpus-per-node": str(gpus),
        "num-gpus-per-node": str(gpus),
        "tensor-model-parallel-size": str(config.tensor_parallel_size),
        "pipeline-model-parallel-size": "1",
        "context-parallel-size": "1",
        "expert-model-parallel-size": "1",
        "expert-tensor-parallel-size": "1",
        **QWEN3_ARCHITECTURE,
        "seq-length": str(context),
        "use-dynamic-batch-size": True,
        "max-tokens-per-gpu": str(context),
        "recompute-granularity": "full",
        "recompute-method": "uniform",
        "recompute-num-layers": "1",
        "megatron-lora-rank": str(config.lora_rank),
        "megatron-lora-alpha": str(LORA_ALPHA),
        "megatron-lora-dropout": "0",
        "megatron-lora-target-modules": list(LORA_TARGETS),
        "check-lora-weight-equal": True,
        "verify-lora-base-weights": True,
        **TRAINING_METHOD,
        "rollout-max-response-len": str(config.max_guidance_tokens),
        "rollout-max-context-len": str(context),
        **NUMERICS,
    }


def to_yaml(document: dict[str, Any], *, upstream: tuple[str, str] | None = None) -> str:
    """The file's text; a search-only stack names its upstream flags in a header comment."""
    header = (
        "# Reef serve.yaml rendered by atoll from the run's stack config; "
        f"the token is read from ${reef_env.TOKEN_ENV}.\n"
    )
    if upstream is not None:
        header += (
            "# search-only (training off): reef serve -c serve.yaml "
            f"--inference.upstream-url {upstream[0]} --inference.upstream-model {upstream[1]}\n"
        )
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
