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


@dataclass(frozen=True)
class Registration:
    """One thing a plugin adds, by name.

    `target` is an import path (`module:attr`) for code, or a filesystem path
    for a task directory. `distribution` and `version` are filled in by the
    registry from the entry point that supplied the record. `requires` names
    what the machine must have for it (keys of `atoll doctor`'s checks: bwrap,
    docker, g++, git-lfs, reef, gpu, node, ...), which drives doctor's "needed
    by" column. `job_plugins` names the Harbor job plugins an agent or a task
    needs; `atoll run` adds them when the user names none. A command whose name
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

    def with_origin(self, distribution: str, version: str) -> Registration:
        return replace(self, distribution=distribution, version=version)
