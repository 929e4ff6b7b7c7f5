"""Backends by short name, imported only when asked for.

The Docker backend pulls in the docker SDK; bubblewrap users should not pay
for that import, so each backend module is loaded lazily here.
"""

from __future__ import annotations

import importlib
import threading

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.spec import SandboxError

# name -> "module:Class"
_BACKENDS: dict[str, str] = {
    "bwrap": "atoll.core.sandbox.bwrap_backend:BwrapBackend",
    "docker": "atoll.core.sandbox.docker_backend:DockerBackend",
}

_instances: dict[str, SandboxBackend] = {}
_lock = threading.Lock()


def backend_names() -> list[str]:
    """Every backend name this install knows, whether or not it works here."""
    return sorted(_BACKENDS)


def get_backend(name: str) -> SandboxBackend:
    """The (shared, thread-safe) backend called `name`; SandboxError if unknown."""
    with _lock:
        backend = _instances.get(name)
        if backend is not None:
            return backend
        target = _BACKENDS.get(name)
        if target is None:
            known = ", ".join(backend_names())
            raise SandboxError(f"unknown sandbox backend {name!r}; known backends: {known}")
        module_name, _, class_name = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise SandboxError(
                f"sandbox backend {name!r} cannot be loaded ({exc}); "
                "reinstall atoll-core with its dependencies (`uv sync`)"
            ) from exc
        created: SandboxBackend = getattr(module, class_name)()
        _instances[name] = created
        return created


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
