"""The one place atoll-pi-train reaches into the Euler code: atoll-euler's public store API and
curriculum state, and the gate's reading of a printed and a stated value (the shell reward
compares as it does)."""

from __future__ import annotations

from atoll.euler import LANGUAGES as EULER_LANGUAGES
from atoll.euler import (
    CurriculumError,
    Store,
    StoreError,
    equals,
    final_nonempty_line,
    load_curriculum,
    normalize,
    stated_in,
)

__all__ = [
    "EULER_LANGUAGES",
    "CurriculumError",
    "Store",
    "StoreError",
    "equals",
    "final_nonempty_line",
    "load_curriculum",
    "normalize",
    "stated_in",
]
