"""Euler problems 91-100 are reserved for promotion: no training command draws from them.

A promotion measures whether a checkpoint got better on problems it never
trained on. Training takes problems in numerical order from 1 (and the
curriculum climbs the same way), so promotion's own default problems are a
later range set aside here, once, for every run: `atoll pi train answer`
leaves them out of its numerical order and of its replay pools, and refuses
a curriculum whose current problem lies in them; `atoll pi train promote`
evaluates them unless told otherwise (and checks any problems it is given
against what the run and its ancestors trained on).
"""

from __future__ import annotations

from collections.abc import Iterable

FIRST, LAST = 91, 100
PROMOTION_PROBLEMS = tuple(range(FIRST, LAST + 1))
PROMOTION_RANGE = f"{FIRST}-{LAST}"


def is_reserved(number: int) -> bool:
    return FIRST <= number <= LAST


def reserved_among(numbers: Iterable[int]) -> list[int]:
    """The reserved problems among `numbers`, sorted, each once."""
    return sorted({n for n in numbers if is_reserved(n)})


def outside(numbers: Iterable[int]) -> list[int]:
    """`numbers` without the reserved ones, order kept."""
    return [n for n in numbers if not is_reserved(n)]


def numbers_text(numbers: Iterable[int]) -> str:
    """`1-3,7,91-100`: sorted numbers with runs of consecutive ones as ranges."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
