"""A private Docker engine for atoll: its own dockerd, socket, data and base image.

Nothing here touches a system-wide Docker: the engine listens on its own
socket, keeps its data under a per-user state directory and is stopped only
through the pidfile it wrote, so tests and CI get a real engine without
root-level setup beyond the `docker.io` and `debootstrap` packages.
"""

from __future__ import annotations

from atoll.core.docker_engine.errors import EngineError
from atoll.core.docker_engine.paths import BASE_IMAGE, EnginePaths, default_docker_host

__all__ = ["BASE_IMAGE", "EngineError", "EnginePaths", "default_docker_host"]
