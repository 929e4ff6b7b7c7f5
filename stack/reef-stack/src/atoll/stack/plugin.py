"""atoll-reef-stack's registrations with the atoll host.

The reef-stack job plugin is registered here once it exists; until then the plugin adds nothing.
"""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl  # noqa: F401  (hooks are added as features land)
