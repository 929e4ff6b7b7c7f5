"""The stack's own settings: how to start it, never what the run is.

The run's identity (groups, rollouts, lengths, LoRA rank, tensor-parallel
size, steps, the guidance model) lives only in the run's config, which the
agent hands over (`atoll.stack.config`); these options say where and how the
processes run. The command line and the job
plugin's `--pk` keys map one to one onto these fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from atoll.core import reef_env
from atoll.stack.errors import StackError

#: GPUs of the default split: the trainer (and its colocated SGLang) on 0,1, the local executor on 2.
TRAINER_GPUS = "0,1"
EXECUTOR_GPU = "2"


class StackOptions(BaseModel):
    """How to start the stack for one run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: Path | None = Field(
        None,
        description="The run config file (TOML or YAML), read by the agent that runs on the stack.",
    )
    agent: str | None = Field(
        None, description="The agent whose run config `config` is, when several run on the stack."
    )
    training: bool | None = Field(
        None, description="Train the guidance model; default: the config's."
    )
    upstream_url: str | None = Field(None, description="Guidance endpoint for search-only mode.")
    upstream_model: str | None = Field(None, description="Model name at the guidance endpoint.")
    port: int | None = Field(
        None, ge=1, le=65535, description="Reef's port; default: the config's."
    )
    host: str = reef_env.DEFAULT_HOST
    reef_home: str | None = Field(None, description="Reef source checkout; default: $REEF_HOME.")
    stack_dir: Path | None = Field(None, description="State file, serve.yaml and logs.")
    ready_timeout_s: float | None = Field(None, gt=0, description="Health deadline in seconds.")
    trainer_gpus: str = TRAINER_GPUS
    executor_gpu: str = EXECUTOR_GPU
    executor_server: Literal["auto", "on", "off"] = "auto"
    grace_s: float = Field(30.0, ge=0, description="Seconds between SIGTERM and SIGKILL on stop.")

    @field_validator("training", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("on", "true", "yes", "1"):
                return True
            if lowered in ("off", "false", "no", "0"):
                return False
            raise ValueError(f"training must be on or off, not {value!r}")
        return value


def options_from_kwargs(kwargs: dict[str, object]) -> StackOptions:
    """Options from `--pk key=value` pairs, with one clear error for a bad key or value."""
    from pydantic import ValidationError

    normalized = {key.replace("-", "_"): value for key, value in kwargs.items()}
    try:
        return StackOptions(**normalized)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        known = ", ".join(StackOptions.model_fields)
        raise StackError(f"reef-stack option {where}: {first['msg']} (options: {known})") from None
