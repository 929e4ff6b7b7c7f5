"""Binary byte sizes, so that a limit reads as `64 * MiB` everywhere and means one thing.

Limits, caps and chunk sizes across atoll are powers of 1024 (as the kernel's
rlimits, cgroups and Docker count them); `exact` writes one back the way a
user reads it.
"""

from __future__ import annotations

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

_UNITS = (("GiB", GiB), ("MiB", MiB), ("KiB", KiB))


def exact(size: int) -> str:
    """`size` in the largest binary unit that divides it (`2 GiB`, `64 KiB`), else in bytes."""
    for unit, scale in _UNITS:
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"
