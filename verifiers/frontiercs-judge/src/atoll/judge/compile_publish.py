"""A fresh build's binary: run at once from a private copy, published to the cache behind the cases.

Publishing a build durably waits on the disk for milliseconds (the binary's
fsync, the rename, the directory's fsync), which a judge added to every fresh
submission before its first case. A `StagedBuild` is the finished binary in
a private directory of its own, which the cases run from at once; meanwhile
`publish` (in another thread) makes it durable and puts it in the cache with
one rename of a directory holding a hard link to it, in the same order as
ever: after a crash the cache holds the whole binary or none of it. The
private copy goes once both are done with it (`release`), off the way of
whoever is last.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from atoll.core.durable import fsync_dir, fsync_file


class StagedBuild:
    """The binary of a build in `work_dir` (the caller's), with the seconds its compile took."""

    def __init__(
        self,
        work_dir: Path,
        binary: Path,
        seconds: float,
        later: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self.work_dir = work_dir
        self.binary = binary
        self.seconds = seconds
        self._holders = 2  # the one who runs it and the one who publishes it
        self._lock = threading.Lock()
        self._later = later  # how the copy is removed off the caller's path (None: at once)

    def publish(self, target: Path, cache_dir: Path) -> None:
        """Make the binary durable, then `target` (in a directory of its own) with one rename.

        OSError if it cannot; a cache that already has `target` keeps its own.
        """
        with contextlib.suppress(OSError):
            fsync_file(self.binary)
        published = self.work_dir / "published"
        published.mkdir(mode=0o755)
        os.link(self.binary, published / target.name)
        target.parent.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(published, target.parent)
        except OSError:
            if not target.is_file():
                raise
        with contextlib.suppress(OSError):
            fsync_dir(cache_dir)

    def release(self) -> None:
        """One holder is done with the private copy; the last removes it."""
        with self._lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            if self._later is None:
                self._remove()
            else:
                self._later(self._remove)

    def _remove(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
