"""A job's agents have their options checked before any job plugin starts a service.

Harbor makes a job's agents only after its job plugins have started, so an
option an agent refuses (`--ak groups=0`) was reported once the FrontierCS
judge, or Reef's stack, had started for nothing. Every atoll job plugin
calls `check_job_agents` before it starts anything: each agent of the job
whose registration names a check (`Registration.settings`, else its stack's
config function) reads its own options, and the first refusal is one line
naming the agent, whichever plugin runs first.
"""

from __future__ import annotations

from collections.abc import Iterable

from atoll.core.registry import Registry, RegistryError, load
from atoll.core.stack_use import AgentRefused, HarborAgent, StackConfigError, read_options

__all__ = ["AgentRefused", "StackConfigError", "check_job_agents"]


def check_job_agents(agents: Iterable[HarborAgent], registry: Registry | None = None) -> None:
    """Raise the first agent's refusal of its options (`AgentRefused`), if any.

    Agents that no installed plugin registers, or whose registration names no
    check, are left to Harbor. A check that cannot be imported or that fails
    otherwise is a `StackConfigError` naming the agent.
    """
    try:
        registry = registry or load()
    except RegistryError as exc:
        raise StackConfigError(str(exc)) from None
    for agent in agents:
        record = registry.agent(agent.import_path, agent.name)
        if record is None:
            continue
        target = record.settings or (record.stack.config if record.stack else None)
        if target is not None:
            read_options(record, target, dict(agent.kwargs or {}), agent.model_name)
