"""The one place atoll-pi-train reaches into the Euler code: atoll-euler's public store API."""

from __future__ import annotations

from atoll.euler import LANGUAGES as EULER_LANGUAGES
from atoll.euler import Store, StoreError, normalize

__all__ = ["EULER_LANGUAGES", "Store", "StoreError", "normalize"]
