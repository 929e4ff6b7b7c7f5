"""Measure one container's CPU time and peak memory after it is gone.

The engine deletes a container's cgroup when it exits, and with it the
counters. So each run gets its own *parent* group (`cgroup_parent`); the
kernel charges CPU time and memory to every ancestor, so the parent still
holds the whole run's totals after the container's own group has vanished.
This needs an engine on this host using the cgroupfs driver, and root; where
that is not so, `ContainerCgroup.create` returns None and the run is not
measured (limits are still enforced by the engine).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "atoll-sandbox"
PREFIX = "docker-"


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_keyed(path: Path, key: str) -> int | None:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def _unified() -> bool:
    return (ROOT / "cgroup.controllers").exists()


def _prefix() -> str:
    return f"{PREFIX}{os.getpid()}-"


def leftovers() -> list[Path]:
    """This process's per-run parent groups that still exist (none between runs)."""
    if _unified():
        return sorted((ROOT / PARENT).glob(f"{_prefix()}*"))
    return sorted(ROOT.glob(f"*/{PARENT}/{_prefix()}*"))


class ContainerCgroup:
    """The parent group of one container: pass `.parent` as `cgroup_parent`, then read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.parent = f"/{PARENT}/{name}"

    @classmethod
    def create(cls, engine_is_local_cgroupfs: bool) -> ContainerCgroup | None:
        if not engine_is_local_cgroupfs or os.geteuid() != 0 or not ROOT.is_dir():
            return None
        return cls(f"{_prefix()}{uuid.uuid4().hex}")

    def _dir(self, controller: str) -> Path:
        if _unified():
            return ROOT / PARENT / self.name
        return ROOT / controller / PARENT / self.name

    def cpu_seconds(self) -> float | None:
        if _unified():
            usec = _read_keyed(self._dir("") / "cpu.stat", "usage_usec")
            return None if usec is None else usec / 1e6
        ns = _read_int(self._dir("cpuacct") / "cpuacct.usage")
        return None if ns is None else ns / 1e9

    def peak_memory(self) -> int | None:
        if _unified():
            return _read_int(self._dir("") / "memory.peak")
        return _read_int(self._dir("memory") / "memory.max_usage_in_bytes")

    def directories(self) -> list[Path]:
        if _unified():
            path = ROOT / PARENT / self.name
            return [path] if path.exists() else []
        return [d for d in ROOT.glob(f"*/{PARENT}/{self.name}") if not d.parent.parent.is_symlink()]

    def remove(self, timeout: float = 5.0) -> None:
        """Delete the (by now empty) parent groups the engine made for this run."""
        deadline = time.monotonic() + timeout
        pending = self.directories()
        while pending:
            still = []
            for directory in pending:
                # The engine's own child group may linger for a moment after removal.
                for child in directory.iterdir():
                    if child.is_dir():
                        with contextlib.suppress(OSError):
                            child.rmdir()
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    still.append(directory)
            pending = still
            if pending and time.monotonic() > deadline:
                names = ", ".join(str(d) for d in pending)
                raise OSError(f"cgroups still busy after the container was removed: {names}")
            if pending:
                time.sleep(0.01)
