"""Short names on `atoll run`: rewrite them to what Harbor already accepts.

`--agent guidance-ttt` becomes `--agent atoll.guidance_ttt.agent:GuidanceTTTAgent`,
`--env atoll-local` an import path, `--task polyomino_packing` a `--path` to
the task directory; a dynamic task source may claim a family of names
(`--task frontiercs/17`, when a FrontierCS checkout is configured). Harbor's
own names, `module:Class` paths and registry references (`org/name`) that no
source claims pass through untouched, so every Harbor flag keeps its meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from atoll.core.argv import occurrences, starts_command
from atoll.core.records import Kind
from atoll.core.registry import Registry, UnknownName

# Commands whose options name agents, environments, verifiers and tasks.
RUN_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("run",),
    ("job", "start"),
    ("jobs", "start"),
    ("trial", "start"),
    ("trials", "start"),
)


@dataclass(frozen=True)
class _Slot:
    kind: Kind
    flags: tuple[str, ...]


AGENT_FLAGS = ("--agent", "-a")
ENV_FLAGS = ("--env", "-e")
PATH_FLAGS = ("--path", "-p")

_SLOTS = (
    _Slot(Kind.AGENT, AGENT_FLAGS),
    _Slot(Kind.ENVIRONMENT, ENV_FLAGS),
    _Slot(Kind.VERIFIER, ("--verifier",)),
    _Slot(Kind.TASK, ("--task", "-t")),
)
_SLOT_OF = {flag: slot for slot in _SLOTS for flag in slot.flags}
_FLAGS = tuple(_SLOT_OF)


def harbor_agent_names() -> set[str]:
    from harbor.models.agent.name import AgentName

    return set(AgentName.values())


def harbor_environment_names() -> set[str]:
    from harbor.models.environment_type import EnvironmentType

    return {member.value for member in EnvironmentType}


def _passes_through(kind: Kind, value: str) -> bool:
    if ":" in value:  # module:Class, acp:... shorthands
        return True
    if kind is Kind.AGENT:
        return value in harbor_agent_names()
    if kind is Kind.ENVIRONMENT:
        return value in harbor_environment_names()
    if kind is Kind.TASK:
        return "/" in value  # Harbor registry form org/name[@ref]
    return False


def _known_names(registry: Registry, kind: Kind) -> list[str]:
    names = set(registry.names(kind))
    if kind is Kind.AGENT:
        names |= harbor_agent_names()
    elif kind is Kind.ENVIRONMENT:
        names |= harbor_environment_names()
    return sorted(names)


def is_run_command(argv: Sequence[str]) -> bool:
    return starts_command(argv, RUN_COMMANDS)


def resolve(argv: Sequence[str], registry: Registry) -> list[str]:
    """Return argv with atoll short names replaced; raise UnknownName on a bad one."""
    args = list(argv)
    out: list[str] = []
    done = 0
    for found in occurrences(args, _FLAGS):
        out.extend(args[done : found.start])
        if found.value is None:
            out.extend(args[found.start : found.stop])  # let Harbor report the missing value
        else:
            out.extend(_rewrite(_SLOT_OF[found.flag], found.flag, found.value, registry))
        done = found.stop
    out.extend(args[done:])
    if len(list(occurrences(out, PATH_FLAGS))) > 1:
        raise UsageError("--task names a local task directory; do not also pass --path")
    return out


class UsageError(Exception):
    """A command line that cannot be handed to Harbor as it is."""


def _rewrite(slot: _Slot, flag: str, value: str, registry: Registry) -> list[str]:
    if slot.kind is Kind.TASK:
        # A registered task, or one a dynamic task source names (`frontiercs/17`);
        # else an `org/name` reference passes on to Harbor's registry below.
        directory = registry.resolve_task(value)
        if directory is not None:
            return ["--path", str(directory)]
        if _passes_through(slot.kind, value):
            return [flag, value]
        raise UnknownName(slot.kind, value, _known_names(registry, slot.kind))
    record = registry.find(slot.kind, value)
    if record is not None:
        return [flag, record.target]
    if _passes_through(slot.kind, value):
        return [flag, value]
    raise UnknownName(slot.kind, value, _known_names(registry, slot.kind))
