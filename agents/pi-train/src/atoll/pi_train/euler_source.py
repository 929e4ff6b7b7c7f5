"""The one place atoll-pi-train reaches into the Euler code: atoll-euler's store and curriculum state."""

from __future__ import annotations

from atoll.euler import LANGUAGES as EULER_LANGUAGES
from atoll.euler import Store, StoreError, normalize
from atoll.euler.curriculum import CurriculumError
from atoll.euler.curriculum import load as load_curriculum

__all__ = [
    "EULER_LANGUAGES",
    "CurriculumError",
    "Store",
    "StoreError",
    "load_curriculum",
    "normalize",
]
