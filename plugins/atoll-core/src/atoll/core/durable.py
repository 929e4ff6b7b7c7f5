"""Crash-safe files: a reader sees the old file or the whole new one, never a mix.

Receipts, manifests, archives, resume state and engine records all outlive the
process that wrote them, so every plugin writes them the same way: into a
temporary file in the same directory, fsync'd, renamed over the target, and
the directory fsync'd so the rename itself survives a power loss. Keeping the
sequence in one place keeps a forgotten step from hiding in one copy.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """Flush a file some other writer (a compiler, tar) finished to stable storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def canonical_json(data: Any) -> bytes:
    """One encoding per value: sorted keys, no NaN, UTF-8, a trailing newline."""
    return (json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()


@contextlib.contextmanager
def atomic_replace(
    path: Path, *, suffix: str = ".tmp", make_parents: bool = False
) -> Iterator[Path]:
    """A temporary path beside `path` that replaces it, durably, when the block ends cleanly.

    For files another program writes (tar, a compiler): the block fills the
    yielded path; on an exception the temporary file is removed and `path`
    is left as it was.
    """
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes, *, make_parents: bool = False) -> None:
    """Replace `path` with `data` atomically and durably."""
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, make_parents: bool = False) -> None:
    """Replace `path` with `text` (UTF-8) atomically and durably."""
    atomic_write_bytes(path, text.encode("utf-8"), make_parents=make_parents)


def atomic_write_json(path: Path, data: Any, *, make_parents: bool = False) -> None:
    """Replace `path` with the canonical JSON of `data` atomically and durably."""
    atomic_write_bytes(path, canonical_json(data), make_parents=make_parents)
