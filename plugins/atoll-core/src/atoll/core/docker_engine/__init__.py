"""A private Docker engine for atoll: its own dockerd, socket, data and base image.

Nothing here touches a system-wide Docker: the engine listens on its own
socket, keeps its data under a per-user state directory and is stopped only
through the pidfile it wrote, so tests and CI get a real engine without
root-level setup beyond the `docker.io` and `debootstrap` packages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atoll.core.docker_engine.errors import EngineError
from atoll.core.docker_engine.files import tail
from atoll.core.docker_engine.paths import BASE_IMAGE, EnginePaths, default_docker_host
from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.core.docker_engine.base_image import MIRROR_ENV, image_id

# The base image's mirror variable and its local ID: imported on first use.
__getattr__ = exports(
    __name__,
    {
        "MIRROR_ENV": "atoll.core.docker_engine.base_image",
        "image_id": "atoll.core.docker_engine.base_image",
    },
)

__all__ = [
    "BASE_IMAGE",
    "MIRROR_ENV",
    "EngineError",
    "EnginePaths",
    "default_docker_host",
    "image_id",
    "tail",
]
