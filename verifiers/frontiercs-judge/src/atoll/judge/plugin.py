"""atoll-frontiercs-judge's registrations with the atoll host.

The judge verifier and the `atoll judge` command are registered here.
"""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl  # noqa: F401  (hooks are added as features land)
