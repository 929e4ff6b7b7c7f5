"""The plugin registry: loads every `atoll` entry point and merges their records.

Hook modules are imported, but nothing they name is: a record's target is only
imported when the user runs it.

Users choose what loads as with pytest and llm: `ATOLL_PLUGINS` names the only
plugins to load (atoll-core, the host, always loads), `ATOLL_DISABLE_PLUGINS`
names plugins to skip; both take distribution or entry-point names, separated
by commas.
"""

from __future__ import annotations

import importlib.metadata as metadata
import inspect
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pluggy

from atoll.core import hookspecs
from atoll.core.entry_points import distribution_of
from atoll.core.records import Kind, Registration

ENTRY_POINT_GROUP = "atoll"
HARBOR_PLUGIN_GROUP = "harbor.plugins"
HOST_DISTRIBUTION = "atoll-core"
LOAD_ONLY_ENV = "ATOLL_PLUGINS"
DISABLE_ENV = "ATOLL_DISABLE_PLUGINS"

_HOOKS_BY_KIND: dict[Kind, str] = {
    Kind.AGENT: "atoll_agents",
    Kind.ENVIRONMENT: "atoll_environments",
    Kind.VERIFIER: "atoll_verifiers",
    Kind.TASK: "atoll_task_sources",
    Kind.EMITTER: "atoll_emitters",
    Kind.JOB_PLUGIN: "atoll_job_plugins",
    Kind.COMMAND: "atoll_commands",
    Kind.CHECK: "atoll_doctor_checks",
    Kind.SCORER: "atoll_scorers",
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
                    f"{previous.distribution} and {record.distribution}; uninstall one, "
                    f"or skip one with {DISABLE_ENV}"
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

    def agent(self, *spellings: str | None) -> Registration | None:
        """The agent record that one of `spellings` names: by its short name or its import path.

        Harbor holds an agent as `--agent` gave it (`guidance-ttt` resolved
        to `module:Class`) or as a job config's `import_path` names it.
        """
        wanted = {s for s in spellings if s}
        for record in self.of_kind(Kind.AGENT):
            if record.name in wanted or record.target in wanted:
                return record
        return None

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

    def check_command_names(self, harbor_commands: Iterable[str]) -> None:
        """Refuse a plugin command that would silently hide a Harbor command of the same name."""
        taken = set(harbor_commands)
        for record in self.of_kind(Kind.COMMAND):
            if record.name in taken and not record.extends_harbor:
                raise RegistryError(
                    f"{record.distribution}: command {record.name!r} has the name of a Harbor "
                    "command, which it would hide; rename it"
                )


def _by_name(record: Registration) -> str:
    return record.name


def _import_target(record: Registration) -> Any:
    from atoll.core.targets import TargetError, import_target

    try:
        return import_target(record.target)
    except TargetError as exc:
        raise TaskSourceError(f"task source {record.name!r}: {exc}") from exc


class AtollPluginManager(pluggy.PluginManager):
    """A plugin manager that also picks up unmarked `atoll_*` functions, as pytest does.

    Without this a misspelled hook without `@hookimpl` would be skipped
    silently; with it every `atoll_*` function is a hook implementation, and
    `check_pending()` refuses the ones no hookspec names.
    """

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self.origins: dict[int, tuple[str, str]] = {}

    def origin(self, plugin: object) -> tuple[str, str]:
        """The (distribution, version) whose entry point supplied a hook module."""
        return self.origins.get(id(plugin), ("(unknown)", ""))

    def distributions(self) -> set[str]:
        return {distribution for distribution, _ in self.origins.values()}

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is not None or not name.startswith(f"{hookspecs.PROJECT}_"):
            return opts
        if not inspect.isroutine(inspect.getattr_static(plugin, name, None)):
            return None
        return {
            "wrapper": False,
            "hookwrapper": False,
            "optionalhook": False,
            "tryfirst": False,
            "trylast": False,
            "specname": None,
        }


@dataclass(frozen=True)
class PluginSelection:
    """Which installed plugins load: `ATOLL_PLUGINS` (only these) and `ATOLL_DISABLE_PLUGINS`."""

    only: frozenset[str] | None = None
    disabled: frozenset[str] = frozenset()

    @classmethod
    def from_environment(cls) -> PluginSelection:
        only = os.environ.get(LOAD_ONLY_ENV)
        return cls(
            only=None if only is None else _names(only),
            disabled=_names(os.environ.get(DISABLE_ENV, "")),
        )

    def admits(self, entry_point: str, distribution: str) -> bool:
        if distribution == HOST_DISTRIBUTION:
            return True  # the host's own commands are what the other plugins plug into
        names = {entry_point, distribution}
        if names & self.disabled:
            return False
        return self.only is None or bool(names & self.only)

    def check(self, installed: Iterable[tuple[str, str]]) -> None:
        """Refuse a name that matches no installed plugin: a typo would load the wrong set."""
        known = {name for pair in installed for name in pair}
        for variable, names in (
            (LOAD_ONLY_ENV, self.only or frozenset()),
            (DISABLE_ENV, self.disabled),
        ):
            unknown = sorted(names - known)
            if unknown:
                raise RegistryError(
                    f"{variable} names {', '.join(unknown)}, which no installed plugin is; "
                    f"installed: {', '.join(sorted(d for _, d in installed))}"
                )


def _names(value: str) -> frozenset[str]:
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def plugin_manager(selection: PluginSelection | None = None) -> AtollPluginManager:
    """A pluggy manager with the selected installed `atoll` hook modules registered and checked.

    A hook module that cannot be imported, a hook with the wrong arguments and a
    hook that no hookspec names (what pluggy's `check_pending()` refuses) are
    each one `RegistryError` naming the plugin, its distribution and the hook.
    """
    selection = selection or PluginSelection.from_environment()
    manager = AtollPluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    entry_points = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    selection.check([(ep.name, distribution_of(ep)) for ep in entry_points])
    for ep in entry_points:
        distribution = distribution_of(ep)
        if manager.has_plugin(ep.name) or not selection.admits(ep.name, distribution):
            continue
        where = f"plugin {ep.value} ({distribution})"
        try:
            module = ep.load()
        except Exception as exc:  # whatever a broken hook module raises on import
            raise RegistryError(
                f"{where} failed to load: {type(exc).__name__}: {_first_line(exc)}; "
                f"set {DISABLE_ENV}={distribution} to skip it"
            ) from None
        manager.origins[id(module)] = (distribution, ep.dist.version if ep.dist else "")
        try:
            manager.register(module, name=ep.name)
        except pluggy.PluginValidationError as exc:
            raise RegistryError(f"{where}: {_first_line(exc)}") from None
    for name, caller in vars(manager.hook).items():
        if name.startswith("_") or caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            distribution, _ = manager.origin(impl.plugin)
            raise RegistryError(
                f"plugin {impl.plugin_name} ({distribution}): {name}() is not an atoll hook; "
                f"known hooks: {', '.join(HOOK_NAMES)}"
            )
    manager.check_pending()  # nothing left for it to refuse; kept as pluggy's own guard
    return manager


HOOK_NAMES = tuple(sorted(name for name in vars(hookspecs) if name.startswith("atoll_")))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def collect(manager: AtollPluginManager) -> list[Registration]:
    """Call every hook and stamp each record with the distribution that made it."""
    records: list[Registration] = []
    for kind, hook_name in _HOOKS_BY_KIND.items():
        hook = getattr(manager.hook, hook_name)
        for impl in hook.get_hookimpls():
            result = impl.function() or []
            distribution, version = manager.origin(impl.plugin)
            for record in result:
                if not isinstance(record, Registration) or record.kind != kind:
                    raise RegistryError(
                        f"{distribution}: {hook_name}() must return Registration records "
                        f"of kind {kind.value!r}, got {record!r}"
                    )
                records.append(record.with_origin(distribution, version))
    return records


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
