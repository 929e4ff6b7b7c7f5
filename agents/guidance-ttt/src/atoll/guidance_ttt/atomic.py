"""Crash-safe whole-file writes: a reader sees the old file or the new one, never a mix.

Write to a temporary file in the same directory, fsync it, rename it over the
target, then fsync the directory so the rename itself survives a power loss.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically and durably."""
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def dump_json(data: Any) -> bytes:
    """The archive's JSON encoding: stable key order, no NaN, UTF-8, trailing newline."""
    return (json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()


def write_json_atomic(path: Path, data: Any) -> None:
    write_bytes_atomic(path, dump_json(data))
