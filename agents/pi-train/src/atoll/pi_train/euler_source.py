"""The one place atoll-pi-train reaches into the Euler code: atoll-euler's public store API and
curriculum state, and the gate's reading of a printed and a stated value (the shell reward
compares as it does)."""

from __future__ import annotations

from atoll.euler import LANGUAGES as EULER_LANGUAGES
from atoll.euler import Store, StoreError, normalize
from atoll.euler.answers import equals, final_nonempty_line, stated_in
from atoll.euler.curriculum import CurriculumError
from atoll.euler.curriculum import load as load_curriculum

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
