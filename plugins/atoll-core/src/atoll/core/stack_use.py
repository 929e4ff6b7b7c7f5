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

from atoll.core.records import Kind, Registration
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


class AgentRefused(StackConfigError):
    """The agent's config function refused its options; `reason` is its own line, unprefixed.

    A job's stack names the agent before it (`str(error)`); a command that
    reads a file the user named can show the agent's line as it is.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.reason = reason


def handed_config(
    plugin: str, agents: Iterable[HarborAgent], registry: Registry | None = None
) -> HandedConfig | None:
    """The config of the first of `agents` whose registration says it runs on `plugin`'s stack.

    None when no agent of the job declares that stack. A config function that
    cannot be imported or that refuses the options is one `StackConfigError`
    naming the agent.
    """
    found = declaring_agent(plugin, agents, registry)
    if found is None:
        return None
    agent, record = found
    return HandedConfig(record, make_config(record, dict(agent.kwargs or {}), agent.model_name))


def declaring_agent(
    plugin: str, agents: Iterable[HarborAgent], registry: Registry | None = None
) -> tuple[HarborAgent, Registration] | None:
    """The first of a job's `agents` that declares `plugin`'s stack, with its registration."""
    registry = _registry(registry)
    for agent in agents:
        record = registry.agent(agent.import_path, agent.name)
        if record is not None and record.stack is not None and record.stack.plugin == plugin:
            return agent, record
    return None


def stack_agents(plugin: str, registry: Registry | None = None) -> list[Registration]:
    """The installed agents whose registration says they run on `plugin`'s stack."""
    registry = _registry(registry)
    return [
        record
        for record in registry.of_kind(Kind.AGENT)
        if record.stack is not None and record.stack.plugin == plugin
    ]


def make_config(record: Registration, options: Mapping[str, Any], model_name: str | None) -> Any:
    """What the agent's config function makes of `options` and `model_name`.

    A function that cannot be imported or that fails is one `StackConfigError`
    naming the agent; one that refuses the options (a `ValueError`) is an
    `AgentRefused` that keeps the agent's own line.
    """
    if record.stack is None:
        raise StackConfigError(f"{agent_label(record)} declares no stack")
    return read_options(record, record.stack.config, options, model_name)


def read_options(
    record: Registration, target: str, options: Mapping[str, Any], model_name: str | None
) -> Any:
    """`target(options, model_name)`, one of the agent's own readings of its Harbor options.

    The errors are `make_config`'s: `StackConfigError` naming the agent for a
    function that cannot be imported or that fails, `AgentRefused` for one
    that refuses the options with a `ValueError`.
    """
    where = agent_label(record)
    try:
        make = import_target(target)
    except TargetError as exc:
        raise StackConfigError(f"{where}: {exc}") from None
    try:
        return make(dict(options), model_name)
    except ValueError as exc:  # the agent refuses its options: its message is the line
        raise AgentRefused(where, str(exc)) from None
    except Exception as exc:
        raise StackConfigError(f"{where}: {target} failed: {type(exc).__name__}: {exc}") from None


def _registry(registry: Registry | None) -> Registry:
    try:
        return registry or load()
    except RegistryError as exc:
        raise StackConfigError(str(exc)) from None


def agent_label(record: Registration) -> str:
    """How an error line names an agent: `agent 'name' (distribution)`."""
    origin = f" ({record.distribution})" if record.distribution else ""
    return f"agent {record.name!r}{origin}"
