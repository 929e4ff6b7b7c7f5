"""Per-run control groups: the only way to cap and measure a whole process tree.

rlimits are per process; a program that forks escapes them. A cgroup holds
every descendant, so its memory limit, pids limit, CPU quota, CPU usage, peak
memory and OOM-kill count describe the run as a whole. We use cgroup v1 controllers
(memory, pids, cpu, cpuacct) when their hierarchies are writable, or a cgroup v2
tree with those controllers enabled; otherwise `RunCgroup.create` returns None
and the caller falls back to rlimits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from atoll.core.sandbox import cgroupfs, owners
from atoll.core.sandbox.cgroupfs import PARENT, ROOT, read_int, read_keyed

DISABLE_VARIABLE = "ATOLL_SANDBOX_CGROUPS"


@dataclass(frozen=True)
class _Layout:
    version: int
    memory: Path | None  # parent directories (created once)
    pids: Path | None
    quota: Path | None  # CPU bandwidth limits
    cpu: Path | None  # CPU accounting


def _writable_parent(hierarchy: Path) -> Path | None:
    if not (hierarchy / "cgroup.procs").exists():
        return None
    parent = hierarchy / PARENT
    try:
        parent.mkdir(exist_ok=True)
    except OSError:
        return None
    return parent if os.access(parent / "cgroup.procs", os.W_OK) else None


@cache
def layout() -> _Layout | None:
    """Where per-run groups can be made on this machine, or None if nowhere."""
    if (ROOT / "cgroup.controllers").exists():  # unified (v2) hierarchy
        return _v2_layout()
    memory = _writable_parent(ROOT / "memory")
    pids = _writable_parent(ROOT / "pids")
    quota = _writable_parent(ROOT / "cpu")
    cpu = _writable_parent(ROOT / "cpuacct")
    if memory is None and pids is None:
        return None
    return _Layout(1, memory, pids, quota, cpu)


def _v2_layout() -> _Layout | None:
    wanted = {"memory", "pids", "cpu"}
    try:
        available = set((ROOT / "cgroup.controllers").read_text().split())
        parent = ROOT / PARENT
        parent.mkdir(exist_ok=True)
        enable = " ".join(f"+{c}" for c in sorted(wanted & available))
        (ROOT / "cgroup.subtree_control").write_text(enable)
        (parent / "cgroup.subtree_control").write_text(enable)
        enabled = set((parent / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if "memory" not in enabled:
        return None
    cpu = parent if "cpu" in enabled else None
    return _Layout(2, parent, parent if "pids" in enabled else None, cpu, cpu)


def run_prefix(owner: str | None = None) -> str:
    """The start of every group name `owner` (default: this process) creates.

    The owner tag holds the pid and its start time, so that the groups of a
    process that died are told apart from those of a later process that got
    the same pid.
    """
    return f"{owner or owners.own_tag()}-"


def created_groups(owner: str | None = None) -> list[Path]:
    """Per-run groups of `owner` (default: this process) that still exist."""
    lay = layout()
    if lay is None:
        return []
    parents = {p for p in (lay.memory, lay.pids, lay.quota, lay.cpu) if p is not None}
    return sorted(g for p in parents for g in p.glob(f"{run_prefix(owner)}*"))


def _pids_in(groups: list[Path]) -> set[int]:
    found: set[int] = set()
    for group in groups:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(line) for line in (group / "cgroup.procs").read_text().split())
    return found


def _kill_and_remove(groups: list[Path], timeout: float) -> None:
    def kill() -> None:
        for pid in _pids_in(groups):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    cgroupfs.remove_groups(
        groups, timeout=timeout, pause=0.01, busy="cgroups still busy after killing their processes",
        each_pass=kill,
    )  # fmt: skip


def reclaim(owner: str, timeout: float = 10.0) -> list[Path]:
    """Kill what runs in a dead process's per-run groups and remove them; returns the groups.

    Refuses (returns nothing) while `owner` is alive: its groups are in use.
    """
    if owners.alive(owner):
        return []
    groups = created_groups(owner)
    if groups:
        _kill_and_remove(groups, timeout)
    return groups


def _remove_own_groups() -> None:
    """At exit: whatever still runs in this process's groups goes with it."""
    with contextlib.suppress(OSError):
        groups = created_groups()
        if groups:
            _kill_and_remove(groups, timeout=5.0)


_exit_hook = threading.Lock()
_exit_hook_set = False


def _ensure_exit_hook() -> None:
    """Groups die with this process: at a normal exit here, after a kill in the watcher."""
    global _exit_hook_set
    from atoll.core.sandbox import reaper

    with _exit_hook:
        if not _exit_hook_set:
            atexit.register(_remove_own_groups)
            _exit_hook_set = True
    reaper.ensure_started()


def _write(path: str, value: int | str) -> None:
    cgroupfs.write(path, str(value))


@cache
def _swap_limited(lay: _Layout) -> bool:
    """Whether memory groups have a swap limit to set (the same in every group of a hierarchy)."""
    if lay.memory is None:
        return False
    name = "memory.memsw.limit_in_bytes" if lay.version == 1 else "memory.swap.max"
    return (lay.memory / name).exists()


class RunCgroup:
    """One run's groups: created before the run, removed (empty) after it.

    A run's groups are made, limited, read and removed once per run, which a
    judge does for every case: the paths it touches are kept as strings, made
    once (pathlib would build and format them again at every use).
    """

    def __init__(self, lay: _Layout, dir_names: list[str], name: str) -> None:
        self._layout = lay
        self.dir_names = tuple(dir_names)
        self.name = name  # this run's own, whatever directories it was given (`CgroupPool`)
        self.procs_names = tuple(f"{d}/cgroup.procs" for d in self.dir_names)
        by_parent = {os.path.dirname(d): d for d in self.dir_names}

        def pick(parent: Path | None) -> str | None:
            return None if parent is None else by_parent.get(str(parent))

        self.memory = pick(lay.memory)
        self.pids = pick(lay.pids)
        self.quota = pick(lay.quota)
        self.cpu = pick(lay.cpu)
        self._swap = _swap_limited(lay)
        self._applied: tuple[int | None, int | None, float | None] | None = None

    @classmethod
    def create(
        cls,
        memory_bytes: int | None,
        processes: int | None,
        cpus: float | None = None,
        account_cpu: bool = False,
        pool: CgroupPool | None = None,
    ) -> RunCgroup | None:
        """Make the groups for one run with these limits; None if cgroups are unusable.

        `pool`: directories of finished runs to take before making new ones (see `CgroupPool`).
        """
        if os.environ.get(DISABLE_VARIABLE, "").lower() == "off":
            return None  # forced rlimit-only mode (also how the fallback is tested)
        lay = layout()
        if lay is None:
            return None
        name = f"{run_prefix()}{uuid.uuid4().hex}"
        # Joining a v1 hierarchy costs an RCU grace period (milliseconds on a
        # busy machine), so a run joins only the hierarchies its limits need.
        wanted = [lay.memory]
        if processes is not None:
            wanted.append(lay.pids)
        if cpus is not None:
            wanted.append(lay.quota)
        if account_cpu:
            wanted.append(lay.cpu)
        parents = {p for p in wanted if p is not None}
        if not parents:
            return None
        # Strings, not paths: `parent / name` is parsed again by every str() (a tenth of a
        # fast case's Python, measured), and the parents' own strings are cached.
        taken = {str(p): pool.take(str(p)) if pool is not None else None for p in parents}
        dirs = [taken[str(p)] or f"{p}/{name}" for p in sorted(parents)]
        _ensure_exit_hook()
        group = cls(lay, dirs, name)
        try:
            for d in group.dir_names:
                if d not in taken.values():
                    os.mkdir(d)
        except OSError:
            group.remove()
            raise
        try:
            group._limit(memory_bytes, processes, cpus)
        except OSError:
            group.remove()
            raise
        group._applied = (memory_bytes, processes, cpus)
        return group

    @property
    def limits_processes(self) -> bool:
        return self.pids is not None

    def fits(self, processes: int | None, cpus: float | None, account_cpu: bool) -> bool:
        """Whether these limits need exactly the hierarchies this group joined (see `create`)."""
        lay = self._layout
        wanted = (
            lay.pids if processes is not None else None,
            lay.quota if cpus is not None else None,
            lay.cpu if account_cpu else None,
        )
        have = (self.pids, self.quota, self.cpu)
        return all((w is None) == (h is None) for w, h in zip(wanted, have, strict=True))

    def apply_limits(
        self, memory_bytes: int | None, processes: int | None, cpus: float | None
    ) -> None:
        """Set this group's limits again: a group made ahead of its run gets the run's here.

        Unlike a new group's, the memory limit may go down as well as up, or
        away (None); on cgroup v1 the memory+swap limit may never be below the
        memory limit, so it is lifted first and set last. Limits the group has
        already (those it was made with, as for the run before) are left as they are.
        """
        wanted = (memory_bytes, processes, cpus)
        if wanted == self._applied:
            return
        self._applied = None  # unknown until every write has succeeded
        if self.memory is not None and self._layout.version == 1:
            memsw = f"{self.memory}/memory.memsw.limit_in_bytes"
            if self._swap:
                _write(memsw, -1)
            _write(
                f"{self.memory}/memory.limit_in_bytes", -1 if memory_bytes is None else memory_bytes
            )
            if self._swap and memory_bytes is not None:
                _write(memsw, memory_bytes)
        elif self.memory is not None:
            _write(f"{self.memory}/memory.max", "max" if memory_bytes is None else memory_bytes)
        self._limit(None, processes, cpus)
        self._applied = wanted

    def _limit(self, memory_bytes: int | None, processes: int | None, cpus: float | None) -> None:
        v1 = self._layout.version == 1
        if memory_bytes is not None and self.memory is not None:
            if v1:
                _write(f"{self.memory}/memory.limit_in_bytes", memory_bytes)
                if self._swap:
                    _write(f"{self.memory}/memory.memsw.limit_in_bytes", memory_bytes)
            else:
                _write(f"{self.memory}/memory.max", memory_bytes)
                if self._swap:
                    _write(f"{self.memory}/memory.swap.max", 0)
        if processes is not None and self.pids is not None:
            _write(f"{self.pids}/pids.max", processes)
        if cpus is not None and self.quota is not None:
            period = 100_000
            quota = max(1000, int(cpus * period))
            if v1:
                _write(f"{self.quota}/cpu.cfs_period_us", period)
                _write(f"{self.quota}/cpu.cfs_quota_us", quota)
            else:
                _write(f"{self.quota}/cpu.max", f"{quota} {period}")

    def procs_files(self) -> list[Path]:
        """The files a process writes its pid to, to join every group of this run."""
        return [Path(d, "cgroup.procs") for d in self.dir_names]

    def pids_inside(self) -> set[int]:
        found: set[int] = set()
        for f in self.procs_names:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in cgroupfs.read(f).split())
        return found

    def peak_memory(self) -> int | None:
        if self.memory is None:
            return None
        v1 = self._layout.version == 1
        return read_int(f"{self.memory}/memory.{'max_usage_in_bytes' if v1 else 'peak'}")

    def oom_killed(self) -> bool:
        """True if the kernel killed something here, or refused memory, for the limit."""
        if self.memory is None:
            return False
        if self._layout.version == 1:
            kills = read_keyed(f"{self.memory}/memory.oom_control", "oom_kill") or 0
            return kills > 0
        events = f"{self.memory}/memory.events"
        return (read_keyed(events, "oom_kill") or 0) > 0 or (read_keyed(events, "oom") or 0) > 0

    def hit_memory_limit(self) -> bool:
        """True if an allocation ever met the limit (reclaim may have saved it)."""
        if self.memory is None:
            return False
        if self._layout.version == 1:
            return (read_int(f"{self.memory}/memory.failcnt") or 0) > 0
        return (read_keyed(f"{self.memory}/memory.events", "max") or 0) > 0

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process of the run so far (None: not accounted)."""
        if self.cpu is None:
            return None
        if self._layout.version == 1:
            ns = read_int(f"{self.cpu}/cpuacct.usage")
            return None if ns is None else ns / 1e9
        usec = read_keyed(f"{self.cpu}/cpu.stat", "usage_usec")
        return None if usec is None else usec / 1e6

    def kill_all(self) -> None:
        for pid in self.pids_inside():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self, timeout: float = 5.0) -> None:
        """Kill whatever is left, wait for the groups to empty, and delete them.

        Once its run has ended a group is empty: the first attempt removes it.
        """
        left = []
        for name in self.dir_names:
            try:
                os.rmdir(name)
            except FileNotFoundError:
                pass
            except OSError:
                left.append(Path(name))
        if not left:
            return
        self.kill_all()
        cgroupfs.remove_groups(
            left,
            timeout=timeout,
            pause=0.002,
            busy="cgroups still busy after killing their processes",
            each_pass=self.kill_all,
        )


class CgroupPool:
    """The empty pids and CPU directories of a session's finished runs, for its next runs.

    Making and removing a cgroup directory costs the kernel more than a short
    run's own start (each is a new kernel object, set up and torn down under
    the cgroup lock); a judge's session does it per case. On cgroup v1 a run's
    pids, cpu and cpuacct directories, once no process is left in them, can
    serve the next run as new ones would: the process count is back to zero,
    the limits are set again per run and the CPU counter is reset. Memory
    directories are always new: their usage keeps charges (page cache, per-CPU
    reserves) that would show in the next run's peak.
    """

    def __init__(self) -> None:
        self._free: dict[str, list[str]] = {}  # parent directory -> its spare directories

    @property
    def held(self) -> list[str]:
        return [d for dirs in self._free.values() for d in dirs]

    def take(self, parent: str) -> str | None:
        """A spare directory of `parent` (a pids, cpu or cpuacct hierarchy's), or None."""
        spare = self._free.get(parent)
        return spare.pop() if spare else None

    def recycle(self, group: RunCgroup) -> list[str]:
        """Keep `group`'s reusable directories (its processes gone), remove the rest.

        Returns the directories kept. OSError (from removing what cannot be
        kept) as `RunCgroup.remove` raises it.
        """
        kept: list[str] = []
        if group._layout.version == 1:
            for d in (group.pids, group.quota, group.cpu):
                # A hierarchy mounted with memory's (its directory the memory one) is not kept.
                if d is None or d == group.memory or d in kept:
                    continue
                if _reset(d, d == group.cpu):
                    kept.append(d)
        rest = RunCgroup(group._layout, [d for d in group.dir_names if d not in kept], group.name)
        rest.remove()
        for d in kept:
            self._free.setdefault(os.path.dirname(d), []).append(d)
        return kept

    def clear(self) -> None:
        """Remove every spare directory; OSError names those that could not be."""
        spare = [Path(d) for d in self.held]
        self._free = {}
        if spare:
            _kill_and_remove(spare, timeout=5.0)


def _reset(directory: str, cpu_accounting: bool) -> bool:
    """Whether `directory` holds no process, its CPU counter (if any) reset to zero."""
    try:
        if cgroupfs.read(f"{directory}/cgroup.procs").strip():
            return False
        if cpu_accounting:
            _write(f"{directory}/cpuacct.usage", 0)
    except OSError:
        return False
    return True
