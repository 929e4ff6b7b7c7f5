"""The one configuration of a Guidance-TTT run.

The agent and the run controller read this model, and the agent hands the
Reef stack the part it renders Reef's serve.yaml from (`agent.stack_settings`),
so every knob is defined here once.
It loads from a TOML or YAML file and takes overrides from Harbor agent
kwargs (`--ak key=value`), whose values may arrive as strings. The identity
subset is what a resume must find unchanged.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from atoll.core import reef_env
from atoll.core.settings_files import SettingsFileError, read_settings_file
from atoll.guidance_ttt.presets import DEFAULT_PRESET, UnknownPreset, preset, spellings


class ConfigError(ValueError):
    """A configuration file or override that cannot be used; the message names the setting."""


class IdentityChanged(ConfigError):
    """A resume found a setting that the saved run was made with changed."""


# Short names accepted in files and overrides, as the method's papers write them.
ALIASES = {"g": "groups", "r": "rollouts"}

IDENTITY_FIELDS = (
    "guidance_model",
    "executor_preset",
    "executor_base_url",
    "executor_model",
    "groups",
    "rollouts",
    "max_guidance_tokens",
    "sequence_length",
    "lora_rank",
    "tensor_parallel_size",
    "prompt_mode",
)
# What atoll's own trainer makes of the samples: identity of a training=tinker run only
# (the other modes never read them, so a change there changes nothing).
TINKER_IDENTITY_FIELDS = ("tinker_base_model", "renderer", "learning_rate", "kl_coef")


class GuidanceConfig(BaseModel):
    """Every setting of a run. Field descriptions are the user documentation."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    groups: int = Field(8, ge=1, description="G: comparison groups (parents) per step.")
    rollouts: int = Field(
        16, ge=1, description="R: rollouts (guidance samples) per group; at least 2 when training."
    )
    steps: int = Field(30, ge=1, description="Final total of steps (not an increment on resume).")
    max_guidance_tokens: int = Field(
        8192, ge=1, description="Max completion tokens of one guidance sample."
    )
    max_executor_tokens: int = Field(
        32768, ge=1, description="Max completion tokens of one executor answer."
    )
    sequence_length: int = Field(
        16384, ge=256, description="Max prompt + completion tokens the guidance model trains on."
    )
    lora_rank: int = Field(32, ge=1, description="Rank of the guidance model's LoRA adapter.")
    tensor_parallel_size: int = Field(
        1,
        ge=1,
        description="GPUs one copy of the guidance model is split across, in serving and in "
        "training (tensor parallelism); it must divide the trainer GPUs.",
    )
    guidance_model: str = Field(
        "Qwen/Qwen3-8B", min_length=1, description="Base model of the trained guidance policy."
    )
    prompt_mode: Literal["summary_only"] = Field(
        "summary_only", description="What the guidance model sees of the parent."
    )
    guidance_concurrency: int = Field(64, ge=1, description="Guidance requests in flight at once.")
    executor_concurrency: int = Field(32, ge=1, description="Executor requests in flight at once.")
    judge_concurrency: int | Literal["judge"] = Field(
        8,
        description="Programs scored at once (judge submissions, checker gradings); 'judge': "
        "the worker budget the judge reports, which on a Ray cluster follows its judge nodes.",
    )
    training: Literal["on", "off", "tinker"] = Field(
        "on",
        description="'on': Reef trains on its GPU stack; 'tinker': atoll trains through the "
        "Tinker API; 'off': search-only, nothing is trained.",
    )
    tinker_base_url: str | None = Field(
        None,
        description="Tinker service for training=tinker (default: $TINKER_BASE_URL, else hosted "
        "Tinker); the key comes from TINKER_API_KEY only.",
    )
    tinker_base_model: str | None = Field(
        None,
        description="Base model trained with training=tinker: a hosted model name, or a local "
        "directory for the local server (default: guidance_model).",
    )
    renderer: str = Field(
        "qwen3",
        min_length=1,
        description="tinker-cookbook renderer of the guidance prompt (qwen3: thinking on).",
    )
    learning_rate: float = Field(4e-5, gt=0, description="Adam learning rate (training=tinker).")
    kl_coef: float = Field(
        0.1, ge=0, description="KL-to-base coefficient of the advantage (training=tinker)."
    )
    tinker_load_checkpoint: str | None = Field(
        None,
        description="Tinker training state whose weights start the LoRA, e.g. a supervised "
        "warm start (training=tinker; default: the base model).",
    )
    sampling_seed: int | None = Field(
        None,
        ge=0,
        description="Seed each guidance sample by its slot (step, group, rollout): the same "
        "weights and prompt give the same guidance, so a resumed run samples what an unbroken "
        "one would (default: unseeded; the endpoint must honour OpenAI's `seed`).",
    )
    tinker_policy_port: int = Field(
        30001,
        ge=1,
        le=65535,
        description="Loopback port of the Tinker policy server that Reef proxies guidance to "
        "(training=tinker).",
    )
    executor_preset: str = Field(
        DEFAULT_PRESET,
        description=f"Executor preset, one of {spellings()}; base URL and model default from it.",
    )
    executor_base_url: str | None = Field(
        None, description="OpenAI-compatible base URL of the executor (default: the preset's)."
    )
    executor_model: str | None = Field(
        None, description="Executor model name (default: the preset's; required for 'openai')."
    )
    state_dir: Path = Field(
        Path("guidance-state"), description="Directory of the archive, journals and resume state."
    )
    reef_url: str = Field(reef_env.DEFAULT_URL, description="Base URL of the Reef server.")
    # Where and under which name the guidance model is served when training is off: Reef
    # proxies to it. Locations, not identity: `guidance_model` already names the policy.
    guidance_base_url: str | None = Field(
        None, description="OpenAI-compatible guidance endpoint Reef proxies to in search-only mode."
    )
    guidance_upstream_model: str | None = Field(
        None, description="Model name at guidance_base_url (default: guidance_model)."
    )

    @field_validator("judge_concurrency")
    @classmethod
    def _some_judge_slots(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("Input should be greater than or equal to 1, or 'judge'")
        return value

    @field_validator("executor_preset", mode="before")
    @classmethod
    def _canonical_preset(cls, value: object) -> str:
        """An alias (`local`, `openrouter`) is stored as its preset's name, which resumes compare."""
        try:
            return preset(str(value)).name
        except UnknownPreset as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _fill_executor(self) -> Self:
        if self.training in ("on", "tinker") and self.rollouts < 2:
            raise ValueError(
                f"rollouts must be at least 2 when training (got {self.rollouts}): Reef's tttd "
                "recipe learns from reward differences within a group; use training=off for R=1"
            )
        defaults = preset(self.executor_preset)
        if self.executor_base_url is None:
            object.__setattr__(self, "executor_base_url", defaults.base_url)
        if self.executor_model is None:
            if defaults.model is None:
                raise ValueError(
                    f"executor_model is required with executor_preset {self.executor_preset!r}"
                )
            object.__setattr__(self, "executor_model", defaults.model)
        if self.guidance_upstream_model is None:
            object.__setattr__(self, "guidance_upstream_model", self.guidance_model)
        if self.tinker_base_model is None:
            object.__setattr__(self, "tinker_base_model", self.guidance_model)
        if self.training == "tinker" and "guidance_base_url" in self.model_fields_set:
            raise ValueError(
                "guidance_base_url is not used with training=tinker: Reef proxies guidance to "
                "the run's own Tinker policy server (set tinker_policy_port to move it)"
            )
        return self

    @property
    def tinker_policy_url(self) -> str:
        """Where the run's Tinker policy server answers (training=tinker), as Reef's upstream."""
        return f"http://127.0.0.1:{self.tinker_policy_port}/v1"

    def identity_fields(self) -> tuple[str, ...]:
        if self.training == "tinker":
            return IDENTITY_FIELDS + TINKER_IDENTITY_FIELDS
        return IDENTITY_FIELDS

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share with the run it continues."""
        return {name: getattr(self, name) for name in self.identity_fields()}

    def identity_change(self, saved: Mapping[str, Any]) -> str | None:
        """The first identity field whose saved value differs, described; None if none does."""
        current = self.identity()
        for name in self.identity_fields():
            if name not in saved:
                return f"{name} is missing from the saved run"
            if saved[name] != current[name]:
                return f"{name} changed from {saved[name]!r} to {current[name]!r}"
        return None

    def check_identity(self, saved: Mapping[str, Any]) -> None:
        """Raise `IdentityChanged` naming the first changed identity field."""
        change = self.identity_change(saved)
        if change is not None:
            raise IdentityChanged(f"cannot resume: {change}; start a new state directory instead")


def setting_names() -> list[str]:
    return list(GuidanceConfig.model_fields)


def read_config_file(path: Path) -> dict[str, Any]:
    """The settings in a `.toml`, `.yaml` or `.yml` file (a mapping of setting to value)."""
    try:
        return read_settings_file(path)
    except SettingsFileError as exc:
        raise ConfigError(str(exc)) from None


def load_config(
    path: Path | None = None, overrides: Mapping[str, Any] | None = None
) -> GuidanceConfig:
    """Defaults, then the file's settings, then the overrides; one `ConfigError` if invalid."""
    merged: dict[str, Any] = {}
    if path is not None:
        merged.update(_normalise(read_config_file(path), str(path)))
    merged.update(_normalise(dict(overrides or {}), "override"))
    try:
        return GuidanceConfig(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, merged)) from None


def from_agent_kwargs(kwargs: Mapping[str, Any]) -> GuidanceConfig:
    """The config from Harbor agent kwargs; `config=<file>` names a TOML or YAML file."""
    rest = dict(kwargs)
    path = rest.pop("config", None)
    return load_config(Path(str(path)) if path is not None else None, rest)


def _normalise(settings: Mapping[str, Any], source: str) -> dict[str, Any]:
    fields = GuidanceConfig.model_fields
    result: dict[str, Any] = {}
    for key, value in settings.items():
        name = str(key).strip().lower().replace("-", "_")
        name = ALIASES.get(name, name)
        if name not in fields:
            known = ", ".join(fields)
            raise ConfigError(f"{source}: unknown setting {str(key)!r}; known settings: {known}")
        result[name] = _coerce(name, value)
    return result


def _coerce(name: str, value: Any) -> Any:
    """Make a value fit its field where the intent is plain: 2 for a text field, YAML's `on`."""
    annotation = GuidanceConfig.model_fields[name].annotation
    accepts_text = annotation in (str, Path) or (
        typing.get_origin(annotation) in (typing.Union, types.UnionType)
        and str in typing.get_args(annotation)
    )
    if isinstance(value, bool):
        if name == "training":  # YAML 1.1 reads a bare `on` / `off` as a boolean
            return "on" if value else "off"
        return value
    if accepts_text and isinstance(value, int | float):
        return str(value)
    return value


def _describe(exc: ValidationError, given: Mapping[str, Any]) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if location and location in given:
        return f"setting {location!r}: {message} (got {given[location]!r})"
    if location:
        return f"setting {location!r}: {message}"
    return message
