"""The plugin registry: loads every `atoll` entry point and merges their records.

Hook modules are imported, but nothing they name is: a record's target is only
imported when the user runs it.
"""

from __future__ import annotations

import importlib.metadata as metadata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pluggy

from atoll.core import hookspecs
from atoll.core.records import Kind, Registration

ENTRY_POINT_GROUP = "atoll"
HARBOR_PLUGIN_GROUP = "harbor.plugins"

_HOOKS_BY_KIND: dict[Kind, str] = {
    Kind.AGENT: "atoll_agents",
    Kind.ENVIRONMENT: "atoll_environments",
    Kind.VERIFIER: "atoll_verifiers",
    Kind.TASK: "atoll_task_sources",
    Kind.EMITTER: "atoll_emitters",
    Kind.JOB_PLUGIN: "atoll_job_plugins",
    Kind.COMMAND: "atoll_commands",
    Kind.CHECK: "atoll_doctor_checks",
}


class RegistryError(Exception):
    """A plugin declared something the host cannot accept."""


class TaskSourceError(Exception):
    """A dynamic task source owns a task name but cannot provide the task; the message says why."""


class UnknownName(LookupError):
    """A short name that no installed plugin registered."""

    def __init__(self, kind: Kind, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(set(known))
        listed = ", ".join(self.known) or "(none installed)"
        super().__init__(f"unknown {kind.value} {name!r}; known {kind.value}s: {listed}")


@dataclass(frozen=True)
class HarborPlugin:
    """A Harbor job plugin as Harbor itself sees it (`harbor.plugins`)."""

    name: str
    target: str
    distribution: str
    version: str


class Registry:
    """Every record of every installed atoll plugin, indexed by kind and name."""

    def __init__(self, records: Iterable[Registration]) -> None:
        self._records: dict[Kind, dict[str, Registration]] = {kind: {} for kind in Kind}
        self._resolved: dict[Path, Registration] = {}  # task dirs dynamic sources gave
        for record in records:
            bucket = self._records[record.kind]
            previous = bucket.get(record.name)
            if previous is not None and previous != record:
                raise RegistryError(
                    f"{record.kind.value} {record.name!r} is registered by both "
                    f"{previous.distribution} and {record.distribution}; uninstall one"
                )
            bucket[record.name] = record

    def all(self) -> list[Registration]:
        return [r for kind in Kind for r in sorted(self._records[kind].values(), key=_by_name)]

    def of_kind(self, kind: Kind) -> list[Registration]:
        return sorted(self._records[kind].values(), key=_by_name)

    def names(self, kind: Kind) -> list[str]:
        return sorted(self._records[kind])

    def get(self, kind: Kind, name: str) -> Registration:
        try:
            return self._records[kind][name]
        except KeyError:
            raise UnknownName(kind, name, self._records[kind]) from None

    def find(self, kind: Kind, name: str) -> Registration | None:
        return self._records[kind].get(name)

    def task_dir(self, name: str) -> Path:
        found = self.resolve_task(name)
        if found is None:
            raise UnknownName(Kind.TASK, name, self._records[Kind.TASK])
        return found

    def resolve_task(self, name: str) -> Path | None:
        """The directory of task `name`: a static record's, or a dynamic source's by prefix.

        None when nothing installed claims the name (Harbor's registry may);
        TaskSourceError when a dynamic source claims it but cannot provide it.
        """
        record = self._records[Kind.TASK].get(name)
        if record is not None and not record.dynamic:
            return Path(record.target)
        sources = [
            r for r in self._records[Kind.TASK].values() if r.dynamic and name.startswith(r.name)
        ]
        for source in sorted(sources, key=lambda r: len(r.name), reverse=True):
            resolver = _import_target(source)
            try:
                found = resolver(name)
            except TaskSourceError:
                raise
            except Exception as exc:  # a plugin's failure, said in one line
                raise TaskSourceError(f"{source.distribution}: task {name!r}: {exc}") from exc
            if found is not None:
                directory = Path(found)
                self._resolved[directory.resolve()] = source
                return directory
        return None

    def task_record(self, task_dir: Path) -> Registration | None:
        """The record a task directory came from: a static task's, or the dynamic source's."""
        try:
            resolved = task_dir.resolve()
        except OSError:
            return None
        if resolved in self._resolved:
            return self._resolved[resolved]
        for record in self._records[Kind.TASK].values():
            if not record.dynamic:
                try:
                    if Path(record.target).resolve() == resolved:
                        return record
                except OSError:
                    continue
        return None


def _by_name(record: Registration) -> str:
    return record.name


def _import_target(record: Registration) -> Any:
    from atoll.core.targets import TargetError, import_target

    try:
        return import_target(record.target)
    except TargetError as exc:
        raise TaskSourceError(f"task source {record.name!r}: {exc}") from exc


def plugin_manager() -> pluggy.PluginManager:
    """A pluggy manager with every installed `atoll` hook module registered."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return manager


def collect(manager: pluggy.PluginManager) -> list[Registration]:
    """Call every hook and stamp each record with the distribution that made it."""
    records: list[Registration] = []
    for kind, hook_name in _HOOKS_BY_KIND.items():
        hook = getattr(manager.hook, hook_name)
        for impl in hook.get_hookimpls():
            result = impl.function() or []
            distribution, version = _origin(manager, impl.plugin)
            for record in result:
                if not isinstance(record, Registration) or record.kind != kind:
                    raise RegistryError(
                        f"{distribution}: {hook_name}() must return Registration records "
                        f"of kind {kind.value!r}, got {record!r}"
                    )
                records.append(record.with_origin(distribution, version))
    return records


def _origin(manager: pluggy.PluginManager, plugin: object) -> tuple[str, str]:
    for registered, dist in manager.list_plugin_distinfo():
        if registered is plugin:
            return dist.metadata["Name"], dist.version
    return "(unknown)", ""


@cache
def load() -> Registry:
    """The registry of installed plugins (loaded once per process)."""
    return Registry(collect(plugin_manager()))


def harbor_plugins() -> list[HarborPlugin]:
    """Harbor's own job-plugin entry points, from whichever distribution declares them."""
    found = []
    for ep in metadata.entry_points(group=HARBOR_PLUGIN_GROUP):
        dist = ep.dist
        found.append(
            HarborPlugin(
                name=ep.name,
                target=ep.value,
                distribution=dist.metadata["Name"] if dist else "(unknown)",
                version=dist.version if dist else "",
            )
        )
    return sorted(found, key=lambda p: p.name)
