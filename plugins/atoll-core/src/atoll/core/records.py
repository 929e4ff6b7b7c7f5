"""Declarative records that plugins hand to the host.

Hooks return these instead of live objects so that listing what is installed
imports nothing but the hook modules themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum


class Kind(StrEnum):
    AGENT = "agent"
    ENVIRONMENT = "environment"
    VERIFIER = "verifier"
    TASK = "task"
    EMITTER = "emitter"
    JOB_PLUGIN = "job plugin"
    COMMAND = "command"
    CHECK = "check"
    SCORER = "scorer"


@dataclass(frozen=True)
class StackUse:
    """An agent's stack: the Harbor job plugin that starts it, and how the agent's options configure it.

    `plugin` names the job plugin (`reef-stack`). `config` is the import path
    (`module:function`) of the agent's own reading of its Harbor options,
    `(kwargs: Mapping[str, Any], model_name: str | None) -> config`: the
    agent's `--ak` pairs and `--model` in, the config the stack starts from
    out (the stack plugin documents what it accepts). The stack plugin finds
    the agent's record through the registry and calls it, so a stack names
    no agent, any agent can use a stack, and both read one set of options
    the same way.
    """

    plugin: str
    config: str


@dataclass(frozen=True)
class Registration:
    """One thing a plugin adds, by name.

    `target` is an import path (`module:attr`) for code, or a filesystem path
    for a task directory. `distribution` and `version` are filled in by the
    registry from the entry point that supplied the record. `requires` names
    what the machine must have for it (keys of `atoll doctor`'s checks: bwrap,
    docker, g++, git-lfs, reef, gpu, node, ...), which drives doctor's "needed
    by" column. `job_plugins` names the Harbor job plugins an agent or a task
    needs; `atoll run` adds them when the user names none. An agent's `stack`
    (a `StackUse`) names the job plugin that starts its stack and how the
    agent's options configure that stack; its plugin counts as one of the
    agent's job plugins. An agent's `task_scorer` says that it scores
    candidates with the scorer its task's `contract.json` names, the value
    being the scorer to assume when the contract names none (or the task is
    not known): that scorer's own `job_plugins` then count as the agent's, so
    a run starts a service (the FrontierCS judge) only for a task scored with
    it. An agent's `settings` is the import path of its own check of its
    Harbor options, `(kwargs, model_name) -> Any` raising `ValueError` with a
    line the user can act on; every atoll job plugin runs it before it starts
    anything (`atoll.core.agent_settings`), so options the agent would refuse
    never cost a service start (an agent with a `stack` is checked by its
    stack's config function when it names no `settings`). A command whose name
    is a Harbor command's is refused, unless `extends_harbor` says it extends
    Harbor's on purpose: then `atoll NAME` is Harbor's command group with the
    plugin's sub-commands added (replacing Harbor's of the same name), so that
    everything Harbor's `NAME` does keeps working.

    A task record with `dynamic` set is a task source that names its tasks
    itself: `name` is a prefix (`frontiercs/`) and `target` the import path
    of a function `(full name) -> Path | None` that returns the directory of
    the task so named (writing it first if need be), or None to leave the
    name to Harbor's registry; it raises TaskSourceError for a name it owns
    but cannot provide.
    """

    name: str
    kind: Kind
    target: str
    summary: str
    distribution: str = ""
    version: str = ""
    requires: tuple[str, ...] = field(default_factory=tuple)
    job_plugins: tuple[str, ...] = ()
    dynamic: bool = False
    extends_harbor: bool = False
    stack: StackUse | None = None
    task_scorer: str | None = None
    settings: str | None = None

    @property
    def needed_job_plugins(self) -> tuple[str, ...]:
        """The job plugins a run of this agent or task needs: `job_plugins`, then the stack's."""
        if self.stack is None or self.stack.plugin in self.job_plugins:
            return self.job_plugins
        return (*self.job_plugins, self.stack.plugin)

    def with_origin(self, distribution: str, version: str) -> Registration:
        return replace(self, distribution=distribution, version=version)
