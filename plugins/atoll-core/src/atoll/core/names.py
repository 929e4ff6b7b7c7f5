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


_SLOTS = (
    _Slot(Kind.AGENT, ("--agent", "-a")),
    _Slot(Kind.ENVIRONMENT, ("--env", "-e")),
    _Slot(Kind.VERIFIER, ("--verifier",)),
    _Slot(Kind.TASK, ("--task", "-t")),
)


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
    words = [a for a in argv if not a.startswith("-")][:2]
    return any(tuple(words[: len(cmd)]) == cmd for cmd in RUN_COMMANDS)


def resolve(argv: Sequence[str], registry: Registry) -> list[str]:
    """Return argv with atoll short names replaced; raise UnknownName on a bad one."""
    out: list[str] = []
    i = 0
    args = list(argv)
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        slot, value, inline = _match(arg)
        if slot is None:
            out.append(arg)
            i += 1
            continue
        if not inline:
            if i + 1 >= len(args):
                out.append(arg)  # let Harbor report the missing value
                i += 1
                continue
            value = args[i + 1]
            i += 1
        i += 1
        out.extend(_rewrite(slot, arg.split("=", 1)[0], value, registry))
    if sum(1 for a in out if a in ("-p", "--path") or a.startswith("--path=")) > 1:
        raise UsageError("--task names a local task directory; do not also pass --path")
    return out


class UsageError(Exception):
    """A command line that cannot be handed to Harbor as it is."""


def _match(arg: str) -> tuple[_Slot | None, str, bool]:
    for slot in _SLOTS:
        for flag in slot.flags:
            if arg == flag:
                return slot, "", False
            if flag.startswith("--") and arg.startswith(flag + "="):
                return slot, arg.split("=", 1)[1], True
    return None, "", False


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
