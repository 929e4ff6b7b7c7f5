"""Test inputs kept in memory, so that a case does not read its input file again.

A judge serves many submissions of the same few problems, and each case of
each submission hands its program the same input bytes: read from the file
every time, a fast program's case paid more for the read (a few hundred
microseconds on a busy disk) than for a fifth of its own run. Inputs are
kept by path, most recently used first, up to `MAX_BYTES` in all; an input
larger than `MAX_ONE_BYTES` is read each time rather than push out the rest.
Problems' files do not change while a judge runs (their parsed forms are
kept for the judge's life already), so nothing here is ever re-read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from atoll.core.sizes import MiB

MAX_BYTES = 256 * MiB
MAX_ONE_BYTES = 32 * MiB


class CaseInputs:
    """Input bytes by path, least recently used dropped first beyond `max_bytes`."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_one_bytes: int = MAX_ONE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.max_one_bytes = max_one_bytes
        self._kept: OrderedDict[Path, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def read(self, path: Path) -> bytes:
        """The bytes of `path`: kept ones, else read now (and kept when they fit)."""
        with self._lock:
            found = self._kept.get(path)
            if found is not None:
                self._kept.move_to_end(path)
                return found
        data = path.read_bytes()
        if len(data) <= self.max_one_bytes:
            self._keep(path, data)
        return data

    def _keep(self, path: Path, data: bytes) -> None:
        with self._lock:
            if path in self._kept:
                return
            self._kept[path] = data
            self._size += len(data)
            while self._size > self.max_bytes:
                _, dropped = self._kept.popitem(last=False)
                self._size -= len(dropped)

    @property
    def kept_bytes(self) -> int:
        with self._lock:
            return self._size


#: The process's inputs, shared by every problem of every engine in it.
CASE_INPUTS = CaseInputs()
