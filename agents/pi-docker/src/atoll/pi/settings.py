"""The settings of one Pi run: the model endpoint, Pi's knobs and the run's limits.

The same model is filled from Harbor agent kwargs (`--ak key=value`, whose
values may arrive as strings), from `atoll pi run` options, and by callers of
`atoll.pi.rollout`. It names the API key's environment variable, never the
key: the key is read from the environment when Pi starts and handed to Pi's
process environment only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from atoll.core.sizes import KiB, MiB

Thinking = Literal["off", "minimal", "low", "medium", "high", "xhigh"]

# An environment variable's name: Pi would run a value starting with "!" as a shell command.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SettingsError(ValueError):
    """A setting that cannot be used; the message names it and says what is expected."""


class PiSettings(BaseModel):
    """Everything that decides how Pi runs, apart from the prompt and the tools' target."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="OpenAI-compatible endpoint (ends in /v1 as a rule).")
    model: str = Field(min_length=1, description="The model name the endpoint serves.")
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable that holds the endpoint's API key."
    )
    thinking: Thinking | None = Field(
        None, description="Pi's thinking level; unset: Pi's default for the model (off)."
    )
    system_prompt: Path | None = Field(
        None, description="A file whose text replaces Pi's default system prompt."
    )
    max_turns: int = Field(30, ge=1, description="Model turns before Pi is aborted.")
    timeout_s: float = Field(900.0, gt=0, description="Wall clock of the whole run, in seconds.")
    max_output_bytes: int = Field(
        64 * MiB, ge=KiB, description="Bytes of Pi event stream before Pi is aborted."
    )
    command_timeout_s: float = Field(
        300.0, gt=0, description="Longest one bash command may run (a shorter model timeout wins)."
    )
    command_output_bytes: int = Field(
        MiB, ge=KiB, description="Bytes kept of each command's stdout and of its stderr."
    )
    context_window: int = Field(128_000, ge=1024, description="The model's context window.")
    max_tokens: int = Field(16_384, ge=1, description="Max output tokens of one model call.")
    input_cost_per_mtok: float = Field(0.0, ge=0, description="USD per million input tokens.")
    output_cost_per_mtok: float = Field(0.0, ge=0, description="USD per million output tokens.")
    provider_retries: int = Field(
        0, ge=0, le=10, description="Transport retries of one model call (a failure is an error)."
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http(s) URL, e.g. http://127.0.0.1:8000/v1")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError("must be the name of an environment variable, e.g. OPENAI_API_KEY")
        return value

    @field_validator("system_prompt")
    @classmethod
    def _readable(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        path = value.expanduser().absolute()
        if not path.is_file():
            raise ValueError(f"{path} is not a file")
        return path

    def system_prompt_text(self) -> str | None:
        return None if self.system_prompt is None else self.system_prompt.read_text("utf-8")

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        """The key from the environment; a missing one is an error naming the variable."""
        value = (os.environ if environ is None else environ).get(self.api_key_env, "")
        if not value:
            raise SettingsError(
                f"the environment variable {self.api_key_env} holding the model's API key is "
                "not set (any value for a server without keys); or name another with "
                "--ak api_key_env=NAME"
            )
        return value

    def identity(self) -> dict[str, Any]:
        """What the record keeps of the settings (JSON types; no secret is among them)."""
        data = self.model_dump(mode="json")
        if self.system_prompt is not None:
            data["system_prompt"] = str(self.system_prompt)
        return data


# Agent-kwarg spellings accepted besides the field names.
ALIASES = {"key_env": "api_key_env", "url": "base_url", "turns": "max_turns"}


def from_kwargs(kwargs: Mapping[str, Any], model_name: str | None = None) -> PiSettings:
    """The settings from Harbor agent kwargs; Harbor's `--model` names the model if unset.

    The whole `--model` value is the model's name at the endpoint (`Qwen/Qwen3-8B`
    stays whole): the provider is always the endpoint that `base_url` names.
    """
    values: dict[str, Any] = {}
    for key, value in kwargs.items():
        name = str(key).strip().lower().replace("-", "_")
        name = ALIASES.get(name, name)
        if name not in PiSettings.model_fields:
            known = ", ".join(PiSettings.model_fields)
            raise SettingsError(f"unknown setting {str(key)!r}; known settings: {known}")
        values[name] = value
    if model_name and "model" not in values:
        values["model"] = model_name
    return build(values)


def build(values: Mapping[str, Any]) -> PiSettings:
    try:
        return PiSettings(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "settings"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise SettingsError(f"--ak {where}: {message}") from None
