"""The one place atoll-pi-train reaches into the Euler code: atoll-euler's public store API,
and the gate's reading of a printed and a stated value (the shell reward compares as it does)."""

from __future__ import annotations

from atoll.euler import LANGUAGES as EULER_LANGUAGES
from atoll.euler import Store, StoreError, normalize
from atoll.euler.answers import equals, final_nonempty_line, stated_in

__all__ = [
    "EULER_LANGUAGES",
    "Store",
    "StoreError",
    "equals",
    "final_nonempty_line",
    "normalize",
    "stated_in",
]
