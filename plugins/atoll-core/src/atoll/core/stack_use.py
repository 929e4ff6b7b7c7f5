"""What a stack's job plugin learns from a job's agents: the config the agent that uses it hands over.

An agent declares the stack it runs on in its registration (`StackUse`):
the job plugin that starts the stack and the agent's function that turns
its Harbor options into the stack's config. A stack's job plugin calls
`handed_config` with the job's agents and its own name; it never names an
agent, so any installed agent can declare it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from atoll.core.records import Registration
from atoll.core.registry import Registry, RegistryError, load
from atoll.core.targets import TargetError, import_target


class StackConfigError(Exception):
    """An agent's options, or its registration, give its stack no usable config; the message says which."""


class HarborAgent(Protocol):
    """What a stack reads of one of a Harbor job's agents (Harbor's `AgentConfig`)."""

    name: str | None
    import_path: str | None
    model_name: str | None
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class HandedConfig:
    """The config an agent handed to its stack, and the record of the agent that did."""

    agent: Registration
    config: Any


def handed_config(
    plugin: str, agents: Iterable[HarborAgent], registry: Registry | None = None
) -> HandedConfig | None:
    """The config of the first of `agents` whose registration says it runs on `plugin`'s stack.

    None when no agent of the job declares that stack. A config function that
    cannot be imported or that refuses the options is one `StackConfigError`
    naming the agent.
    """
    try:
        registry = registry or load()
    except RegistryError as exc:
        raise StackConfigError(str(exc)) from None
    for agent in agents:
        record = registry.agent(agent.import_path, agent.name)
        if record is None or record.stack is None or record.stack.plugin != plugin:
            continue
        where = agent_label(record)
        try:
            make = import_target(record.stack.config)
        except TargetError as exc:
            raise StackConfigError(f"{where}: {exc}") from None
        options: Mapping[str, Any] = dict(agent.kwargs or {})
        try:
            return HandedConfig(record, make(options, agent.model_name))
        except ValueError as exc:  # the agent refuses its options: its message is the line
            raise StackConfigError(f"{where}: {exc}") from None
        except Exception as exc:
            raise StackConfigError(
                f"{where}: {record.stack.config} failed: {type(exc).__name__}: {exc}"
            ) from None
    return None


def agent_label(record: Registration) -> str:
    """How an error line names an agent: `agent 'name' (distribution)`."""
    origin = f" ({record.distribution})" if record.distribution else ""
    return f"agent {record.name!r}{origin}"
