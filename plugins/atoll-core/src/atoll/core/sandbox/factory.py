"""Backends by short name, from the entry-point group `atoll_sandbox_backends`.

atoll-core registers its own two (`bwrap`, `docker`) there, and a third
party's distribution registers its backend the same way, so any backend that
passes `atoll sandbox check` can be chosen by name wherever a backend is
named. A backend's module is imported only when its name is asked for: the
Docker backend pulls in the docker SDK, which bubblewrap users should not pay for.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.spec import SandboxError

if TYPE_CHECKING:
    from importlib import metadata

#: The entry-point group: name -> a SandboxBackend class, a function returning one, or an instance.
GROUP = "atoll_sandbox_backends"

_instances: dict[str, SandboxBackend] = {}
# Reentrant: a third party's backend may wrap another one, asking for it while being made.
_lock = threading.RLock()


@functools.cache
def _registered() -> dict[str, metadata.EntryPoint]:
    from atoll.core import entry_points  # installed metadata is read on the first name asked for

    try:
        return entry_points.named(GROUP)
    except entry_points.EntryPointError as exc:
        raise SandboxError(str(exc)) from None


def backend_names() -> list[str]:
    """Every backend name this install knows, whether or not it works here."""
    return sorted(_registered())


def get_backend(name: str) -> SandboxBackend:
    """The (shared, thread-safe) backend called `name`; SandboxError if unknown or broken."""
    with _lock:
        backend = _instances.get(name)
        if backend is not None:
            return backend
        entry_point = _registered().get(name)
        if entry_point is None:
            known = ", ".join(backend_names())
            raise SandboxError(f"unknown sandbox backend {name!r}; known backends: {known}")
        created = _create(entry_point)
        _instances[name] = created
        return created


def _create(entry_point: metadata.EntryPoint) -> SandboxBackend:
    from atoll.core import entry_points

    try:
        target = entry_points.load(GROUP, entry_point)
    except entry_points.EntryPointError as exc:
        raise SandboxError(str(exc)) from None
    made = target if isinstance(target, SandboxBackend) else target() if callable(target) else None
    if not isinstance(made, SandboxBackend):
        raise SandboxError(
            f"{GROUP} entry point {entry_point.name!r} ({entry_point.value}) from "
            f"{entry_points.distribution_of(entry_point)} is not a SandboxBackend "
            "(nor a class or function that makes one)"
        )
    return made


def available_backends() -> list[str]:
    """The names of the backends whose `check()` passes on this machine."""
    usable = []
    for name in backend_names():
        try:
            get_backend(name).check()
        except SandboxError:
            continue
        usable.append(name)
    return usable
