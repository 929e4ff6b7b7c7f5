"""What a sandboxed command may touch and use, and what came of running it.

One spec, several backends (bubblewrap, Docker): callers describe the box once
and pick a backend by name; every backend must pass the same adversarial
conformance suite (`atoll.core.sandbox.conformance`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath

from atoll.core.sizes import KiB, MiB

# The unprivileged identity untrusted code runs as unless a spec says otherwise.
# 65534 is `nobody` on Debian; it owns nothing on the host.
NOBODY = 65534


class Network(StrEnum):
    NONE = "none"  # no interface at all
    LOOPBACK = "loopback"  # a private loopback only (no host, no internet)
    HOST = "host"  # the host's network (only for trusted task environments)


@dataclass(frozen=True)
class Mount:
    """A host path bound into the box at `target`; read-only unless `writable`."""

    source: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class Limits:
    """Resource limits; None means "no limit of this kind"."""

    cpu_seconds: float | None = 10.0
    wall_seconds: float | None = 30.0
    memory_bytes: int | None = 512 * MiB
    processes: int | None = 64
    file_size_bytes: int | None = 64 * MiB
    open_files: int | None = 256
    stdout_bytes: int = 1 * MiB
    stderr_bytes: int = 64 * KiB
    cpus: float | None = None  # CPU bandwidth (cores); None: no cap
    stack_bytes: int | None = None  # RLIMIT_STACK; None: the system's default
    address_space_bytes: int | None = None  # RLIMIT_AS of the program itself; None: none


class Pipes:
    """Descriptors a program's stdin and stdout are joined to, instead of bytes in and a capture out.

    Two programs that talk to each other (a judge's interactor and the program
    it questions) each get one end of two pipes. The backend takes both
    descriptors over and closes them once the program has started (or failed
    to start), so that each side sees end-of-file as soon as the other exits.
    Closing is idempotent: a descriptor number is never closed twice, since
    another thread may have been given the same number meanwhile.
    """

    def __init__(self, stdin_fd: int, stdout_fd: int) -> None:
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self._open = True
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if not self._open:
                return
            self._open = False
        for fd in (self.stdin_fd, self.stdout_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass(frozen=True)
class SandboxSpec:
    """Everything a backend needs to run one command in isolation.

    Only `mounts` are visible from the host; the rest of the root is the
    backend's minimal system (read-only) plus a private writable /tmp.
    """

    mounts: tuple[Mount, ...] = ()
    workdir: str = "/tmp"
    env: dict[str, str] = field(default_factory=dict)
    uid: int = NOBODY
    gid: int = NOBODY
    network: Network = Network.NONE
    limits: Limits = field(default_factory=Limits)
    image: str | None = None  # Docker backend: image reference, pinned by digest
    # bwrap backend: a user namespace to run in (`UserNamespace.path`). `uid` and `gid` are
    # then ids inside it, and uid 0 is allowed: that namespace's root, which holds a
    # container's default capabilities over the namespace's own (unprivileged) ids only.
    user_namespace: str | None = None
    # The program's stdin is a read-only regular file holding exactly the run's `stdin`
    # bytes (empty if none), not a pipe: `fstat` gives their size, `mmap` maps them and
    # `lseek` moves about them, as on a judge that copies a case's input into a file. Writes
    # to it fail. Not with `pipes=`, whose ends are pipes by nature.
    stdin_seekable: bool = False


class Status(StrEnum):
    OK = "ok"
    RUNTIME_ERROR = "runtime_error"  # non-zero exit or killed by a signal
    CPU_TIME_LIMIT = "cpu_time_limit"
    WALL_TIME_LIMIT = "wall_time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"


@dataclass(frozen=True)
class SandboxResult:
    status: Status
    exit_code: int | None
    signal: int | None
    cpu_seconds: float
    wall_seconds: float
    peak_memory_bytes: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


class SandboxError(Exception):
    """The sandbox itself failed (not the program in it): an infrastructure error."""


def mount_target(target: str) -> str:
    """`target` as an absolute, normalised in-box path below /, or SandboxError.

    Every backend refuses the same targets: a relative one, `/` itself, and
    one with `..` in it (which would name a different place than it reads as).
    """
    path = PurePosixPath(target)
    if not path.is_absolute() or ".." in path.parts or str(path) == "/":
        raise SandboxError(f"sandbox mount target must be an absolute path below /: {target!r}")
    return str(path)
