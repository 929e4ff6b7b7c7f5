"""The executor presets: one table read by config validation, the executor client, the stack handoff and the docs.

A preset says where the frozen executor is by default, how it is sampled,
where its key comes from and how often a transport failure may be retried.
The run config accepts a preset's name or one of its short aliases and stores
the canonical name (the identity a resume compares); the executor client
builds its requests from the same row; the agent hands the Reef stack
whether the preset is served by a local SGLang server the stack should start,
and with which reasoning parser (`agent.stack_settings`); the agent's README lists the rows, and a test checks that
it lists exactly these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


class UnknownPreset(ValueError):
    """A preset name that is neither a preset nor one of its aliases."""


@dataclass(frozen=True)
class LocalServer:
    """The SGLang server the Reef stack starts for a preset served on this machine."""

    reasoning_parser: str | None


@dataclass(frozen=True)
class ExecutorPreset:
    """One executor preset. Holds the name of the key variable, never a key."""

    name: str
    aliases: tuple[str, ...]
    summary: str
    base_url: str
    model: str | None
    api_key_env: str | None
    temperature: float | None
    # Extra fields of the chat-completions body (e.g. the reasoning effort, in the
    # form the provider documents).
    request_options: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 1200.0
    max_retries: int = 0
    local_server: LocalServer | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "request_options", MappingProxyType(dict(self.request_options)))

    @property
    def reasoning_effort(self) -> str | None:
        """The reasoning effort the preset asks for, whichever field carries it."""
        effort = self.request_options.get("reasoning_effort")
        reasoning = self.request_options.get("reasoning")
        if effort is None and isinstance(reasoning, Mapping):
            effort = reasoning.get("effort")
        return None if effort is None else str(effort)


PRESETS: tuple[ExecutorPreset, ...] = (
    ExecutorPreset(
        name="gpt-oss-local",
        aliases=("local",),
        summary="openai/gpt-oss-120b on a local SGLang server",
        base_url="http://127.0.0.1:8000/v1",
        model="openai/gpt-oss-120b",
        api_key_env=None,
        temperature=0.0,
        request_options={"reasoning_effort": "high"},
        max_retries=0,
        local_server=LocalServer(reasoning_parser="gpt-oss"),
    ),
    ExecutorPreset(
        name="openrouter-glm",
        aliases=("openrouter",),
        summary="z-ai/glm-5.2 through OpenRouter",
        base_url="https://openrouter.ai/api/v1",
        model="z-ai/glm-5.2",
        api_key_env="OPENROUTER_API_KEY",
        temperature=1.0,
        request_options={"reasoning": {"effort": "high", "exclude": False}},
        max_retries=6,
    ),
    ExecutorPreset(
        name="openai",
        aliases=(),
        summary="any OpenAI-compatible endpoint (executor_model is required)",
        base_url="https://api.openai.com/v1",
        model=None,
        api_key_env="OPENAI_API_KEY",
        temperature=None,
        max_retries=6,
    ),
)

DEFAULT_PRESET = PRESETS[0].name

_BY_NAME: dict[str, ExecutorPreset] = {
    spelling: preset for preset in PRESETS for spelling in (preset.name, *preset.aliases)
}


def preset(name: str) -> ExecutorPreset:
    """The preset called `name` or one of its aliases (case and surrounding space ignored)."""
    found = _BY_NAME.get(str(name).strip().lower())
    if found is None:
        raise UnknownPreset(f"unknown executor preset {name!r}; choose one of {spellings()}")
    return found


def spellings() -> str:
    """Every accepted spelling, for messages and docs: `gpt-oss-local (local), ...`."""
    return ", ".join(f"{p.name} ({', '.join(p.aliases)})" if p.aliases else p.name for p in PRESETS)
