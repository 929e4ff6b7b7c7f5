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

import os
import uuid
from pathlib import Path

from atoll.core.sandbox import cgroupfs
from atoll.core.sandbox.cgroupfs import PARENT, ROOT
from atoll.core.sandbox.cgroupfs import unified as _unified

PREFIX = "docker-"


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

    def _version(self) -> int:
        return 2 if _unified() else 1

    def cpu_seconds(self) -> float | None:
        return cgroupfs.cpu_seconds(self._dir("cpuacct"), self._version())

    def peak_memory(self) -> int | None:
        return cgroupfs.peak_memory(self._dir("memory"), self._version())

    def directories(self) -> list[Path]:
        if _unified():
            path = ROOT / PARENT / self.name
            return [path] if path.exists() else []
        return [d for d in ROOT.glob(f"*/{PARENT}/{self.name}") if not d.parent.parent.is_symlink()]

    def remove(self, timeout: float = 5.0) -> None:
        """Delete the (by now empty) parent groups the engine made for this run."""
        # The engine's own child group may linger for a moment after removal.
        cgroupfs.remove_groups(
            self.directories(),
            timeout=timeout,
            pause=0.01,
            busy="cgroups still busy after the container was removed",
            with_children=True,
        )
