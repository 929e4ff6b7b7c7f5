"""Run untrusted commands in isolation, the same way on every backend.

Describe the box once (`SandboxSpec`), pick a backend by name
(`get_backend("bwrap")`, `get_backend("docker")`, or a third party's backend
registered in the entry-point group `atoll_sandbox_backends`) and call `run`. What every
backend must do is checked by `atoll.core.sandbox.conformance`.
"""

from __future__ import annotations

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.factory import available_backends, backend_names, get_backend
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

__all__ = [
    "CancelToken",
    "Limits",
    "Mount",
    "Network",
    "Pipes",
    "SandboxBackend",
    "SandboxError",
    "SandboxResult",
    "SandboxSpec",
    "Status",
    "available_backends",
    "backend_names",
    "get_backend",
]
