"""The one exception the engine command raises for problems a user can fix."""

from __future__ import annotations


class EngineError(Exception):
    """The private engine cannot be started, reached or stopped; the message says how to fix it."""
