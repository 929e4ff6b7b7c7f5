"""Run untrusted commands in isolation, the same way on every backend.

Describe the box once (`SandboxSpec`), pick a backend by name
(`get_backend("bwrap")`, `get_backend("docker")`, or a third party's backend
registered in the entry-point group `atoll_sandbox_backends`) and call `run`;
or open a session (`backend.session`, `SessionPool`) to run many commands one
after another in a box prepared once. What every
backend must do is checked by `atoll.core.sandbox.conformance`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atoll.core.lazy import exports
from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.factory import available_backends, backend_names, get_backend
from atoll.core.sandbox.session import SandboxSession
from atoll.core.sandbox.session_pool import SessionPool
from atoll.core.sandbox.spec import (
    Limits,
    Mount,
    Network,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    Status,
)

if TYPE_CHECKING:
    from atoll.core.sandbox.docker_backend import engine_url
    from atoll.core.sandbox.docker_stream import raw_socket

# The Docker backend's engine address and its attached-socket helper, for a distribution
# that drives containers itself (Pi's tools): imported on first use, with the docker SDK.
__getattr__ = exports(
    __name__,
    {
        "engine_url": "atoll.core.sandbox.docker_backend",
        "raw_socket": "atoll.core.sandbox.docker_stream",
    },
)

__all__ = [
    "CancelToken",
    "Limits",
    "Mount",
    "Network",
    "Pipes",
    "SandboxBackend",
    "SandboxError",
    "SandboxResult",
    "SandboxSession",
    "SandboxSpec",
    "SessionPool",
    "Status",
    "available_backends",
    "backend_names",
    "engine_url",
    "get_backend",
    "raw_socket",
]
