"""Reading a run's counters out of cgroupfs, for both backends.

The bubblewrap backend reads the group it made for the run; the Docker
backend reads the parent group it hands the engine. Both ask the same
questions (CPU time, peak memory) of the same files, which differ only
between cgroup v1 and v2.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "atoll-sandbox"  # every run's group lives under this one, per controller


def unified() -> bool:
    """True on a cgroup v2 (unified) hierarchy."""
    return (ROOT / "cgroup.controllers").exists()


def read(path: str | Path) -> str:
    """A cgroup file's text, without the buffered file object's cost (these files are small)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks).decode()
    finally:
        os.close(fd)


def write(path: str | Path, text: str) -> None:
    """Write a cgroup file with one system call, as the kernel expects."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def read_int(path: str | Path) -> int | None:
    try:
        return int(read(path).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_keyed(path: str | Path, key: str) -> int | None:
    try:
        for line in read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def cpu_seconds(group: Path, version: int) -> float | None:
    """CPU time charged to `group` (v1: its cpuacct directory), or None if unreadable."""
    if version == 1:
        ns = read_int(group / "cpuacct.usage")
        return None if ns is None else ns / 1e9
    usec = read_keyed(group / "cpu.stat", "usage_usec")
    return None if usec is None else usec / 1e6


def peak_memory(group: Path, version: int) -> int | None:
    """The most memory `group` (v1: its memory directory) ever held, or None if unreadable."""
    name = "memory.max_usage_in_bytes" if version == 1 else "memory.peak"
    return read_int(group / name)


def remove_groups(
    groups: list[Path],
    *,
    timeout: float,
    pause: float,
    busy: str,
    each_pass: Callable[[], None] | None = None,
    with_children: bool = False,
) -> None:
    """Delete `groups` once they empty; OSError naming them (after `busy`) past `timeout`.

    A group with a process in it cannot be removed, and a killed process leaves
    it a moment later: `each_pass` (a kill) runs before every attempt but the
    first (most groups are empty by then: their run has ended).
    `with_children` also removes empty child groups something else made.
    """
    deadline = time.monotonic() + timeout
    pending = list(groups)
    attempt = 0
    while pending:
        if each_pass is not None and attempt > 0:
            each_pass()
        still = []
        for group in pending:
            if with_children:
                for child in group.iterdir():
                    if child.is_dir():
                        with contextlib.suppress(OSError):
                            child.rmdir()
            try:
                os.rmdir(group)
            except FileNotFoundError:
                pass
            except OSError:
                still.append(group)
        pending = still
        if pending and attempt > 0:  # the first attempt is retried at once, after a kill
            if time.monotonic() > deadline:
                names = ", ".join(str(g) for g in pending)
                raise OSError(f"{busy}: {names}")
            time.sleep(pause)
        attempt += 1
