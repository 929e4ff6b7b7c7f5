"""The one place atoll-pi-train reaches into the Euler code (the store and answer comparison).

The Euler store and its answers live in atoll-pi-docker's `atoll.pi.euler`
today; when they move to their own distribution only these imports change.
"""

from __future__ import annotations

from atoll.pi.euler.answers import normalize
from atoll.pi.euler.runtimes import LANGUAGES as EULER_LANGUAGES
from atoll.pi.euler.store import Store, StoreError

__all__ = ["EULER_LANGUAGES", "Store", "StoreError", "normalize"]
