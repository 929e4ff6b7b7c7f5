"""The optional rollout: a coding agent attempts a finished task in a Harbor trial, blind.

The design's rollout is an agent working on the exported task, scored
independently: a Harbor trial of the final bundle with any agent atoll or
Harbor knows (`pi-docker` by default, `terminus-2`, `oracle` for a dry run),
given the run's model flags. Its reward is reported beside the task and
never changes acceptance: a provider failure, a timeout or a lost request
in the rollout leaves the task exported, with the rollout recorded as
failed and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_ROLLOUT_AGENT = "pi-docker"
DEFAULT_ROLLOUT_TIMEOUT_S = 1800.0
# Harbor's agents that take no model.
MODEL_FREE = frozenset({"oracle", "nop"})


class RolloutAgentError(ValueError):
    """`--rollout-agent` names no agent atoll or Harbor knows."""


@dataclass(frozen=True)
class RolloutAgent:
    """One agent, with the model flags it gets, as a Harbor trial's agent configuration."""

    name: str
    import_path: str | None
    model: str
    base_url: str
    api_key_env: str
    timeout_s: float

    def agent_config(self) -> dict[str, Any]:
        """Keyword arguments of Harbor's `AgentConfig` for this agent."""
        base: dict[str, Any] = {"override_timeout_sec": self.timeout_s}
        if self.name in MODEL_FREE:
            return base | {"name": self.name}
        if self.import_path is not None:  # an atoll agent: Pi's settings
            return base | {
                "import_path": self.import_path,
                "model_name": self.model,
                "kwargs": {
                    "base_url": self.base_url,
                    "model": self.model,
                    "api_key_env": self.api_key_env,
                    "timeout_s": self.timeout_s,
                },
            }
        return base | {  # a Harbor agent (terminus-2, ...): litellm's model and endpoint
            "name": self.name,
            "model_name": f"openai/{self.model}",
            "kwargs": {"api_base": self.base_url},
        }


def resolve_rollout_agent(
    name: str, *, model: str, base_url: str, api_key_env: str, timeout_s: float
) -> RolloutAgent:
    """An atoll agent by short name, a Harbor agent by name, or `module:Class`."""
    from harbor.models.agent.name import AgentName

    from atoll.core.records import Kind
    from atoll.core.registry import load

    record = load().find(Kind.AGENT, name)
    if record is not None:
        path: str | None = record.target
    elif ":" in name:
        path = name
    elif name in {member.value for member in AgentName}:
        path = None
    else:
        known = sorted(set(load().names(Kind.AGENT)) | {m.value for m in AgentName})
        raise RolloutAgentError(
            f"unknown --rollout-agent {name!r}; choose one of {', '.join(known)} or module:Class"
        )
    return RolloutAgent(name, path, model, base_url, api_key_env, timeout_s)
