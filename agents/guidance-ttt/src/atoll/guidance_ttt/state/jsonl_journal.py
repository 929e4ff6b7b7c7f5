"""An append-only journal of JSON lines, each fsync'd before the append returns.

Recording one rollout must not rewrite the whole archive, so events go to a
journal beside the snapshot and are folded into it at the step barrier. A
crash can leave at most the last line torn (the write that was in flight);
reading ignores it and reopening cuts it off, so the next append starts on a
clean line. A damaged line anywhere else is real corruption and is reported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import canonical_json, fsync_dir


class JournalCorrupt(RuntimeError):
    """A journal line other than the last cannot be decoded."""


@dataclass(frozen=True)
class JournalRead:
    """The journal's complete records and the byte length they occupy."""

    records: list[dict[str, Any]]
    valid_length: int
    torn_tail: bool


def read_journal(path: Path) -> JournalRead:
    """Every complete record; a torn or undecodable final line is left out."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return JournalRead([], 0, False)
    records: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    # The text after the last newline is empty for a clean journal, else a torn write.
    complete, tail = lines[:-1], lines[-1]
    for index, line in enumerate(complete):
        record = _decode(line)
        if record is None:
            if index == len(complete) - 1 and not tail:
                return JournalRead(records, offset, True)
            raise JournalCorrupt(
                f"{path}: line {index + 1} is damaged; the journal cannot be replayed"
            )
        records.append(record)
        offset += len(line) + 1
    return JournalRead(records, offset, bool(tail))


class Journal:
    """An open journal file; `append` returns once the record is on stable storage."""

    def __init__(self, path: Path, valid_length: int | None = None) -> None:
        self.path = path
        existed = path.exists()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if valid_length is not None and os.fstat(self._fd).st_size > valid_length:
            os.ftruncate(self._fd, valid_length)
            os.fsync(self._fd)
        if not existed:
            fsync_dir(path.parent)

    def append(self, record: dict[str, Any]) -> None:
        view = memoryview(canonical_json(record))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def truncate(self) -> None:
        """Empty the journal (after its records were folded into a durable snapshot)."""
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None
