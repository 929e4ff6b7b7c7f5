"""The stack's configuration: what Reef and its trainer must know of a run, and nothing else.

The stack renders Reef's serve.yaml, plans its start and builds its command
lines from a `StackConfig` only; it names no agent. An agent that runs on the
stack declares `StackUse("reef-stack", "module:function")` in its
registration; that function turns the agent's options into a `StackConfig`
or a plain mapping of its settings, which `stack_config` validates here. So
an agent needs no dependency on this distribution to hand its settings over,
and the stack none on the agent.

A run config file given to the stack (`atoll stack up --config FILE`, `--pk
config=FILE`) is the agent's own file, with settings the stack does not know,
so the agent reads it: the file is handed to the agent's function as its
`config` option. With no installed agent that declares the stack, the stack
reads the file itself as a mapping of its own settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from atoll.core import reef_env
from atoll.core.records import Registration
from atoll.core.registry import Registry
from atoll.core.settings_files import SettingsFileError, read_settings_file
from atoll.core.stack_use import (
    AgentRefused,
    StackConfigError,
    agent_label,
    make_config,
    stack_agents,
)
from atoll.stack.errors import StackError
from atoll.stack.plugin import JOB_PLUGIN

#: Text settings that a file or an override may give as a number (`guidance_model = 2`).
TEXT_SETTINGS = (
    "guidance_model",
    "reef_url",
    "guidance_base_url",
    "guidance_upstream_model",
    "executor_base_url",
    "executor_model",
    "executor_reasoning_parser",
)


class StackConfig(BaseModel):
    """What the stack reads of a run. Field descriptions are the user documentation."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    groups: int = Field(8, ge=1, description="G: comparison groups (prompts) per training step.")
    rollouts: int = Field(16, ge=1, description="R: rollouts per group; at least 2 when training.")
    steps: int = Field(30, ge=1, description="Training steps of the run.")
    max_guidance_tokens: int = Field(
        8192, ge=1, description="Max completion tokens of one guidance sample."
    )
    sequence_length: int = Field(
        16384, ge=256, description="Max prompt + completion tokens the guidance model trains on."
    )
    lora_rank: int = Field(32, ge=1, description="Rank of the guidance model's LoRA adapter.")
    tensor_parallel_size: int = Field(
        1,
        ge=1,
        description="GPUs one SGLang serving replica spans (tensor parallelism); the stack needs at least that many.",
    )
    guidance_model: str = Field(
        "Qwen/Qwen3-8B", min_length=1, description="Base model of the trained guidance policy."
    )
    training: Literal["on", "off"] = Field(
        "on", description="'off' runs Reef record-only, proxying guidance to an upstream."
    )
    state_dir: Path = Field(
        Path("guidance-state"), description="The run's state directory (Reef's storage under it)."
    )
    reef_url: str = Field(reef_env.DEFAULT_URL, description="Base URL Reef listens on.")
    guidance_base_url: str | None = Field(
        None, description="OpenAI-compatible guidance endpoint Reef proxies to in search-only mode."
    )
    guidance_upstream_model: str | None = Field(
        None, description="Model name at guidance_base_url (default: guidance_model)."
    )
    executor_base_url: str | None = Field(
        None, description="OpenAI-compatible base URL of the agent's executor model."
    )
    executor_model: str | None = Field(None, description="The agent's executor model.")
    executor_served_locally: bool = Field(
        False,
        description="The executor is a model this machine serves: with --executor-server auto, "
        "a training stack starts its SGLang server.",
    )
    executor_reasoning_parser: str | None = Field(
        None, description="SGLang's --reasoning-parser for the executor's server."
    )

    @field_validator("training", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        """YAML 1.1 reads a bare `on` / `off` as a boolean."""
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    @field_validator(*TEXT_SETTINGS, mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        return (
            str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
        )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.training == "on" and self.rollouts < 2:
            raise ValueError(
                f"rollouts must be at least 2 when training (got {self.rollouts}): Reef's tttd "
                "recipe learns from reward differences within a group; use training=off for R=1"
            )
        if self.guidance_upstream_model is None:
            object.__setattr__(self, "guidance_upstream_model", self.guidance_model)
        return self


def stack_config(settings: object) -> StackConfig:
    """A `StackConfig` as it is, or one made from a mapping of its settings; StackError if invalid."""
    if isinstance(settings, StackConfig):
        return settings
    if not isinstance(settings, Mapping):
        raise StackError(
            f"got {type(settings).__name__}, not a StackConfig or a mapping of its settings"
        )
    given: dict[str, Any] = {}
    for key, value in settings.items():
        name = str(key).strip().lower().replace("-", "_")
        if name not in StackConfig.model_fields:
            known = ", ".join(StackConfig.model_fields)
            raise StackError(f"unknown setting {str(key)!r}; known settings: {known}")
        given[name] = value
    try:
        return StackConfig(**given)
    except ValidationError as exc:
        raise StackError(_describe(exc, given)) from None


def from_agent(record: Registration, handed: object) -> StackConfig:
    """What an agent's config function returned, as the stack's config; the error names the agent."""
    if not isinstance(handed, StackConfig | Mapping):
        target = record.stack.config if record.stack else "its stack config"
        raise StackError(
            f"{agent_label(record)}: {target} returned {type(handed).__name__}, "
            "not a StackConfig or a mapping of its settings"
        )
    try:
        return stack_config(handed)
    except StackError as exc:
        raise StackError(f"{agent_label(record)}: {exc}") from None


def file_reader(agent: str | None = None, registry: Registry | None = None) -> Registration | None:
    """The agent that reads a run config given to the stack: `agent`, else the one installed.

    None when no installed agent declares the stack (the stack then reads the
    file itself); several need `agent` to say which.
    """
    try:
        declaring = stack_agents(JOB_PLUGIN, registry)
    except StackConfigError as exc:
        raise StackError(str(exc)) from None
    if agent is not None:
        for record in declaring:
            if agent in (record.name, record.target):
                return record
        names = ", ".join(r.name for r in declaring) or "none is installed"
        raise StackError(f"agent {agent!r} does not run on the {JOB_PLUGIN} stack ({names})")
    if len(declaring) > 1:
        names = ", ".join(r.name for r in declaring)
        raise StackError(
            f"several installed agents run on the {JOB_PLUGIN} stack ({names}); "
            "name the one whose run config this is with --agent NAME (--pk agent=NAME)"
        )
    return declaring[0] if declaring else None


def load(
    path: Path | None, overrides: Mapping[str, Any], reader: Registration | None
) -> StackConfig:
    """The stack's config from a run config file and overrides, read by `reader` (the agent).

    An agent's refusal is its own line, as the agent says it; without an
    agent the file holds the stack's own settings.
    """
    if reader is None:
        return stack_config({**(read_file(path) if path is not None else {}), **overrides})
    options = {**overrides, **({"config": str(path)} if path is not None else {})}
    try:
        handed = make_config(reader, options, None)
    except AgentRefused as exc:
        raise StackError(exc.reason) from None
    except StackConfigError as exc:
        raise StackError(str(exc)) from None
    return from_agent(reader, handed)


def read_file(path: Path) -> dict[str, Any]:
    """The settings in a `.toml`, `.yaml` or `.yml` file (a mapping of setting to value)."""
    try:
        return read_settings_file(path)
    except SettingsFileError as exc:
        raise StackError(str(exc)) from None


def _describe(exc: ValidationError, given: Mapping[str, Any]) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if location and location in given:
        return f"setting {location!r}: {message} (got {given[location]!r})"
    if location:
        return f"setting {location!r}: {message}"
    return message
