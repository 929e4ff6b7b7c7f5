"""atoll.core: the plugin host every atoll plugin builds on.

The package is deliberately light to import: listing plugins or resolving a
short name must not pull in Harbor's job machinery or any backend.
"""

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration, StackUse

__all__ = ["Kind", "Registration", "StackUse", "hookimpl"]
