"""Named extensions other distributions install: one entry-point group, loaded by name.

A group (`atoll_sandbox_backends`, `atoll_pi_commands`, ...) maps short names
to `module:attribute` targets. Listing a group reads installed metadata only;
a target is imported when its name is asked for. A name two distributions
claim, or a target that fails to import, is one `EntryPointError` naming the
distribution to fix. `ATOLL_PLUGINS` and `ATOLL_DISABLE_PLUGINS` choose here
too, by distribution name: a distribution left out of the plugins contributes
nothing to any group either (the host's own entries always count).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any


class EntryPointError(Exception):
    """A group's entry point is ambiguous or cannot be loaded; the message names its distribution."""


def distribution_of(entry_point: metadata.EntryPoint) -> str:
    """The name of the distribution that declared `entry_point`."""
    return entry_point.dist.metadata["Name"] if entry_point.dist else "(unknown distribution)"


def named(group: str) -> dict[str, metadata.EntryPoint]:
    """The group's entry points by name; EntryPointError if two distributions claim one name."""
    found: dict[str, metadata.EntryPoint] = {}
    admitted = _admitted_distributions()
    for entry_point in metadata.entry_points(group=group):
        if not admitted(distribution_of(entry_point)):
            continue
        other = found.get(entry_point.name)
        if other is not None and other.value != entry_point.value:
            raise EntryPointError(
                f"{group} entry point {entry_point.name!r} is declared by both "
                f"{distribution_of(other)} ({other.value}) and "
                f"{distribution_of(entry_point)} ({entry_point.value}); uninstall one"
            )
        found[entry_point.name] = entry_point
    return found


def _admitted_distributions() -> Callable[[str], bool]:
    """Whether `ATOLL_PLUGINS`/`ATOLL_DISABLE_PLUGINS` let a distribution contribute.

    Those variables take distribution names or the names of `atoll` plugins, so a
    distribution counts by its own name and by each plugin name it registers.
    """
    from atoll.core.registry import ENTRY_POINT_GROUP, PluginSelection  # it imports this module

    selection = PluginSelection.from_environment()
    plugins: dict[str, set[str]] = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        plugins.setdefault(distribution_of(entry_point), set()).add(entry_point.name)

    def admitted(distribution: str) -> bool:
        names = plugins.get(distribution) or {distribution}
        return any(selection.admits(name, distribution) for name in names)

    return admitted


def load(group: str, entry_point: metadata.EntryPoint) -> Any:
    """The object `entry_point` names; EntryPointError naming its distribution if it cannot load."""
    try:
        return entry_point.load()
    except Exception as exc:  # whatever a broken third-party module raises on import
        text = str(exc).strip().splitlines()
        reason = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        raise EntryPointError(
            f"{group} entry point {entry_point.name!r} ({entry_point.value}) from "
            f"{distribution_of(entry_point)} cannot be loaded ({reason}); "
            f"reinstall {distribution_of(entry_point)} with its dependencies"
        ) from exc
