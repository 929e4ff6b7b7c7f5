"""atoll.pi: the Pi coding agent with its tools in hardened containers.

The `pi-docker` Harbor agent (`atoll.pi.agent`), the standalone rollout API
(`atoll.pi.rollout`) and `atoll pi install|image build|run`. Pi on Project
Euler is a user of the rollout API in its own distribution, atoll-euler.
Importing this package loads only atoll.core's light part. Its public face:
the rollout API (`atoll.pi.rollout`, its `__all__`) and the names below.
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.pi.audit import audit as audit_tool_calls

# What other distributions use besides the rollout API: the audit of tool calls (a
# trainer's own tool environment flags the same escapes a rollout does). Imported on first use.
__getattr__ = exports(__name__, {"audit_tool_calls": "atoll.pi.audit:audit"})

__all__ = ["audit_tool_calls"]

# Sub-modules other distributions may import as well (the README's "Public face").
__public_modules__ = ("rollout",)
