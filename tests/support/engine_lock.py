"""One Docker engine shared by parallel test workers: most tests share it, a few need it alone.

Tests on the session's engine run side by side under pytest-xdist, and nearly
all of them only add and remove containers of their own. A few change what
every other test on that engine sees (one renames Harbor's egress sidecar
image for a moment; one starts a second dockerd that rewrites the host's
packet filter). Those take the engine exclusively, every other Docker test
takes it shared, through an advisory lock on a file named after the engine,
so that the same rule holds across workers and across test sessions.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def lock_path(docker_host: str) -> Path:
    digest = hashlib.sha256(docker_host.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"atoll-tests-engine-{os.getuid()}-{digest}.lock"


@contextmanager
def engine_held(docker_host: str, exclusive: bool) -> Iterator[None]:
    """Hold the engine shared (others may too) or exclusively (nobody else) while inside."""
    with file_locked(lock_path(docker_host), exclusive):
        yield


@contextmanager
def file_locked(path: Path, exclusive: bool) -> Iterator[None]:
    """flock(2) on `path` (made if missing), shared or exclusive, held while inside.

    The kernel releases it when the holder dies, so a killed worker blocks nobody.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
