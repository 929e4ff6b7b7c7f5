"""The rlimits of one bubblewrap run, decided once for both ways a run starts.

A fresh box sets them with `ulimit` in the shell that execs bubblewrap; a
session's launcher sets them with setrlimit just before the program starts.
Both read this list, so a program meets the same limits either way (what
`/proc/self/limits` shows is the same, which a test checks).
"""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass

from atoll.core.sandbox.cgroups import RunCgroup
from atoll.core.sandbox.spec import Limits
from atoll.core.sizes import KiB

# bwrap, its pid-1 reaper and the program's first process share the pids budget (and
# the launcher and its pid 1 do in a session).
SANDBOX_OWN_PROCESSES = 2

_BLOCK = 512  # the unit of `ulimit -f`


@dataclass(frozen=True)
class Rlimit:
    """One limit: the resource (`resource.RLIMIT_*`), its soft and hard values."""

    resource: int
    soft: int
    hard: int


def run_rlimits(limits: Limits, group: RunCgroup | None) -> list[Rlimit]:
    """The rlimits of a run with `limits` whose cgroup is `group` (None: no cgroup).

    CPU time: the soft limit (SIGXCPU) at the limit rounded up, the hard one
    (SIGKILL) a second later. Without a memory cgroup, the address-space limit
    is the only memory guard left; without a pids cgroup, RLIMIT_NPROC is the
    only process guard. Values are exact multiples of `ulimit`'s units.
    """
    found: list[Rlimit] = []
    if limits.cpu_seconds is not None:
        soft = max(1, math.ceil(limits.cpu_seconds))
        found.append(Rlimit(resource.RLIMIT_CPU, soft, soft + 1))
    if limits.stack_bytes is not None:
        found.append(_both(resource.RLIMIT_STACK, max(1, limits.stack_bytes // KiB) * KiB))
    address_space = limits.address_space_bytes
    if limits.memory_bytes is not None and (group is None or group.memory is None):
        fallback = limits.memory_bytes
        address_space = fallback if address_space is None else min(address_space, fallback)
    if address_space is not None:
        found.append(_both(resource.RLIMIT_AS, max(1, address_space // KiB) * KiB))
    if limits.processes is not None and (group is None or not group.limits_processes):
        found.append(_both(resource.RLIMIT_NPROC, limits.processes + SANDBOX_OWN_PROCESSES))
    if limits.file_size_bytes is not None:
        blocks = max(1, math.ceil(limits.file_size_bytes / _BLOCK))
        found.append(_both(resource.RLIMIT_FSIZE, blocks * _BLOCK))
    if limits.open_files is not None:
        found.append(_both(resource.RLIMIT_NOFILE, limits.open_files))
    return found


def _both(kind: int, value: int) -> Rlimit:
    return Rlimit(kind, value, value)


# dash spells RLIMIT_NPROC -p, bash -u; the units are dash's and bash's alike.
_ULIMIT = {
    resource.RLIMIT_CPU: ("-t", 1),
    resource.RLIMIT_STACK: ("-s", KiB),
    resource.RLIMIT_AS: ("-v", KiB),
    resource.RLIMIT_FSIZE: ("-f", _BLOCK),
    resource.RLIMIT_NOFILE: ("-n", 1),
}


def ulimit_lines(rlimits: list[Rlimit], dash: bool) -> list[str]:
    """Shell lines that set `rlimits` (soft and hard apart where they differ)."""
    lines = []
    for limit in rlimits:
        flag, unit = _ULIMIT.get(limit.resource, ("-p" if dash else "-u", 1))
        if limit.soft == limit.hard:
            lines.append(f"ulimit {flag} {limit.soft // unit}")
        else:
            lines += [
                f"ulimit -S {flag} {limit.soft // unit}",
                f"ulimit -H {flag} {limit.hard // unit}",
            ]
    return lines
