"""The one exception type of the stack launcher.

Every failure a user can act on (a missing executable, a busy port, a stack
that never became healthy) is a `StackError` whose message is one line naming
the fix, so that the command line and the Harbor job plugin can print it
without a traceback.
"""

from __future__ import annotations


class StackError(Exception):
    """The stack could not be rendered, started, inspected or stopped."""
