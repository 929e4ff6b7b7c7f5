"""A SandboxFusion-compatible code runner on loopback, backed by atoll's sandbox.

`atoll sandbox fusion-serve` (and `EmbeddedFusionServer`, in-process) answer
SandboxFusion's `POST /run_code` for Python and JavaScript, running each
program in a fresh box (no network, unprivileged uid, limits); callers use
SandboxFusion's own client. Only loopback is served, and `require_loopback_url`
is how a caller refuses to send code anywhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atoll.core.lazy import exports
from atoll.core.sandbox.fusion.loopback import (
    NotLoopbackError,
    is_loopback_host,
    require_loopback_url,
)

if TYPE_CHECKING:
    from atoll.core.sandbox.fusion.server import DEFAULT_PORT, EmbeddedFusionServer, FusionServer

# The server (its HTTP and request-model imports) loads on first use: a caller that only
# refuses a non-loopback URL does not pay for it.
__getattr__ = exports(
    __name__,
    dict.fromkeys(
        ("DEFAULT_PORT", "EmbeddedFusionServer", "FusionServer"), "atoll.core.sandbox.fusion.server"
    ),
)

__all__ = [
    "DEFAULT_PORT",
    "EmbeddedFusionServer",
    "FusionServer",
    "NotLoopbackError",
    "is_loopback_host",
    "require_loopback_url",
]
