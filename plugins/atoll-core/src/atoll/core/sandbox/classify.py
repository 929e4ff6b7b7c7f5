"""Which Status a finished run gets: one decision for every backend.

The backends observe a run differently (a wait status and a cgroup, or the
engine's container state), but the order of the verdicts must be the same,
or the conformance suite would pass a program on one backend that fails on
the other: a kill for output first, then memory, CPU time, the wall clock,
the file-size limit, and only then a plain crash.
"""

from __future__ import annotations

import signal

from atoll.core.sandbox.spec import Limits, Status


class Why:
    """Why the watcher killed the run (if it did)."""

    WALL = "wall"
    CPU = "cpu"
    OUTPUT = "output"
    CANCELLED = "cancelled"


def split_exit_code(code: int) -> tuple[int | None, int | None]:
    """(exit code, signal) of a run whose reaper reports a death by signal N as 128+N."""
    if 128 < code < 128 + signal.NSIG:
        return None, code - 128
    return code, None


def classify(
    *,
    limits: Limits,
    killed_for: str | None,
    exit_code: int | None,
    sig: int | None,
    cpu: float | None,
    oom_killed: bool,
    memory_pressure: bool,
    looks_out_of_memory: bool = False,
) -> Status:
    """The Status of a finished run.

    `oom_killed`: the kernel or engine reported a kill for the memory limit.
    `memory_pressure`: the run met or neared its memory limit, so a SIGKILL
    that ended it counts as the memory limit. `looks_out_of_memory`: without
    a cgroup, the symptoms of a refused allocation (checked only for a failed
    run, after every limit the backend could observe directly).
    """
    failed = sig is not None or exit_code != 0
    over_cpu = limits.cpu_seconds is not None and cpu is not None and cpu >= limits.cpu_seconds
    if killed_for == Why.OUTPUT:
        return Status.OUTPUT_LIMIT
    if oom_killed or (failed and sig == signal.SIGKILL and memory_pressure):
        return Status.MEMORY_LIMIT
    if killed_for == Why.CPU or sig == signal.SIGXCPU or over_cpu:
        return Status.CPU_TIME_LIMIT
    if killed_for in (Why.WALL, Why.CANCELLED):
        return Status.WALL_TIME_LIMIT
    if sig == signal.SIGXFSZ:
        return Status.OUTPUT_LIMIT
    if failed and looks_out_of_memory:
        return Status.MEMORY_LIMIT
    if failed:
        return Status.RUNTIME_ERROR
    return Status.OK
