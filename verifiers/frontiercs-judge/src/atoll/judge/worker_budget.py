"""How many cases run at once, counted in processes kept busy rather than in cases.

A checked case keeps one process busy; a dialogue keeps two (the program and
its interactor answer each other turn by turn). Counting a dialogue as one
would put two dialogues on two cores at once, and each would then stretch the
other's wall time, up to its wall limit. Units are granted in the order they
were asked for, so a dialogue waiting for two is never overtaken for ever by
checked cases that each need one.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class WorkerBudget:
    """`units` of parallel work shared by every submission an engine judges."""

    def __init__(self, units: int) -> None:
        if units < 1:
            raise ValueError(f"a worker budget needs at least one unit, not {units}")
        self.units = units
        self._free = units
        self._waiting: deque[int] = deque()
        self._tickets = itertools.count()
        self._changed = threading.Condition()

    @property
    def waiting(self) -> int:
        """How many callers are waiting for their units (for status and tests)."""
        with self._changed:
            return len(self._waiting)

    @contextmanager
    def held(self, units: int) -> Iterator[None]:
        """Hold `units` (at most the whole budget) while the block runs; wait for them first."""
        units = min(units, self.units)
        with self._changed:
            ticket = next(self._tickets)
            self._waiting.append(ticket)
            try:
                self._changed.wait_for(lambda: self._waiting[0] == ticket and self._free >= units)
            finally:
                self._waiting.remove(ticket)
                self._changed.notify_all()
            self._free -= units
        try:
            yield
        finally:
            with self._changed:
                self._free += units
                self._changed.notify_all()
