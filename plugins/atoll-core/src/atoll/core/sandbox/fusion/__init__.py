"""A SandboxFusion-compatible code runner on loopback, backed by atoll's sandbox.

`atoll sandbox fusion-serve` (and `EmbeddedFusionServer`, in-process) answer
SandboxFusion's `POST /run_code` for Python and JavaScript, running each
program in a fresh box (no network, unprivileged uid, limits); callers use
SandboxFusion's own client. Only loopback is served, and `require_loopback_url`
is how a caller refuses to send code anywhere else.
"""

from __future__ import annotations

from atoll.core.sandbox.fusion.loopback import (
    NotLoopbackError,
    is_loopback_host,
    require_loopback_url,
)
from atoll.core.sandbox.fusion.server import DEFAULT_PORT, EmbeddedFusionServer, FusionServer

__all__ = [
    "DEFAULT_PORT",
    "EmbeddedFusionServer",
    "FusionServer",
    "NotLoopbackError",
    "is_loopback_host",
    "require_loopback_url",
]
