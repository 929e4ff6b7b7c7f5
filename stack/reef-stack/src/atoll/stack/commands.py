"""The command lines of the processes the stack starts: `reef serve` and the executor's SGLang.

Kept apart from starting them so that what runs where (the trainer's GPUs,
the executor's GPU, the Reef checkout on the import path, an existing Ray
cluster passed through) can be read and checked without starting anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from atoll.core.reef_env import HOME_ENV
from atoll.stack import preflight
from atoll.stack.config import StackConfig
from atoll.stack.errors import StackError
from atoll.stack.planning import Plan


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path | None = None


def reef_command(plan: Plan, env: Mapping[str, str], serve_yaml: Path) -> Command:
    """`reef serve -c serve.yaml`: upstream flags when search-only, the checkout and GPUs when training.

    `RAY_ADDRESS`, when set, passes through unchanged: Reef then joins that
    cluster instead of starting its own, and leaves it running.
    """
    argv = [preflight.reef_executable(env), "serve", "-c", str(serve_yaml)]
    reef_env = dict(env)
    if plan.upstream is not None:
        url, model = plan.upstream
        argv += ["--inference.upstream-url", url, "--inference.upstream-model", model]
        return Command(tuple(argv), reef_env, plan.stack_dir)
    home = preflight.reef_home(plan.options.reef_home, env)
    reef_env[HOME_ENV] = str(home)
    reef_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(home), env.get("PYTHONPATH", "")) if p)
    reef_env["CUDA_VISIBLE_DEVICES"] = plan.options.trainer_gpus
    return Command(tuple(argv), reef_env, home)


def executor_wanted(plan: Plan) -> bool:
    """Start the executor's SGLang server: asked for, or training with a locally served executor."""
    choice = plan.options.executor_server
    if choice != "auto":
        return choice == "on"
    return plan.training and plan.config.executor_served_locally


def executor_root(config: StackConfig) -> str:
    """The executor server's root URL (its health endpoint is `/health`)."""
    parts = urlsplit(config.executor_base_url or "")
    if not parts.scheme or not parts.netloc:
        raise StackError(
            "the executor's SGLang server needs the executor's address: set executor_base_url "
            f"in the run config (got {config.executor_base_url!r}), or pass --executor-server off"
        )
    return f"{parts.scheme}://{parts.netloc}"


def executor_command(plan: Plan, env: Mapping[str, str]) -> Command:
    """SGLang serving the executor model on its own GPU, at the config's executor URL.

    The executor's reasoning parser (its preset's, for Guidance-TTT) is
    passed as the method's launch command does, so that the model's analysis
    comes back apart from its answer.
    """
    parts = urlsplit(executor_root(plan.config))
    model = plan.config.executor_model
    if not model:
        raise StackError(
            "the executor's SGLang server needs the executor model: set executor_model "
            "in the run config, or pass --executor-server off"
        )
    argv: tuple[str, ...] = (
        sys.executable, "-m", "sglang.launch_server",
        "--model-path", model,
        "--served-model-name", model,
        "--host", parts.hostname or "127.0.0.1",
        "--port", str(parts.port or 80),
        "--tp", "1",
    )  # fmt: skip
    if plan.config.executor_reasoning_parser:
        argv += ("--reasoning-parser", plan.config.executor_reasoning_parser)
    return Command(argv, dict(env, CUDA_VISIBLE_DEVICES=plan.options.executor_gpu))
