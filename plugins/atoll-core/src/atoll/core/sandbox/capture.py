"""A capped output buffer, shared by both backends' stream readers.

A program that floods its output must be stopped at the cap rather than fill
memory; the reader keeps what fits and says when the cap was crossed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Capture:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def add(self, chunk: bytes) -> bool:
        """Keep what fits; return False once the cap is exceeded."""
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.data += chunk[: max(room, 0)]
            self.truncated = True
            return False
        self.data += chunk
        return True
