"""One supervised bubblewrap-family run, however its box is started.

A run of the bwrap backend starts either a fresh bubblewrap box or, in a
session, the launcher that enters a prepared one. Everything around that
start is the same and lives here: the run's cgroup, its stdin (bytes, a
sealed memfd, or a caller's pipe), the supervisor's clocks and caps, the
counters read back, and the Status. A `Starter` says only how the box
starts, given the run's cgroup and the status descriptor: a command to run
(a fresh box), or a spawn through a session's launcher server.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.cgroups import CgroupPool, RunCgroup
from atoll.core.sandbox.classify import classify, split_exit_code
from atoll.core.sandbox.rlimits import SANDBOX_OWN_PROCESSES
from atoll.core.sandbox.seekable_stdin import sealed_memfd
from atoll.core.sandbox.spec import (
    Limits,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
)
from atoll.core.sandbox.supervise import Child, Outcome, PopenChild, supervise
from atoll.core.sizes import KiB

# What allocation failures look like when only RLIMIT_AS guards memory.
_ALLOC_FAILURE = re.compile(
    rb"bad_alloc|MemoryError|Cannot allocate memory|out of memory|memory exhausted",
    re.IGNORECASE,
)


#: (stdin, stdout, stderr, the status pipe's read and write ends) -> the started run.
Spawn = Callable[[tuple[int, int, int], tuple[int, int]], Child]


@dataclass(frozen=True)
class Start:
    """How one run's box starts: `argv` run as a child of ours (inheriting `pass_fds`), or `spawn`."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    #: What failed, for the SandboxError when the box never reported its program's start.
    failure: str = "bubblewrap could not set up the sandbox"
    spawn: Spawn | None = None


#: (the run's cgroup or None, the status pipe's write end) -> how to start the run.
Starter = Callable[[RunCgroup | None, int], Start]


#: The run's cgroup for its limits (None where cgroups cannot be used); removed after the run.
GroupMaker = Callable[[Limits], RunCgroup | None]

#: What becomes of the run's cgroup once the run is over (its counters read).
GroupRelease = Callable[[RunCgroup], None]


def run_in_box(
    spec: SandboxSpec,
    stdin: bytes | None,
    cancel: CancelToken | None,
    pipes: Pipes | None,
    starter: Starter,
    group_for: GroupMaker | None = None,
    release: GroupRelease | None = None,
) -> SandboxResult:
    """Run what `starter` starts under `spec`'s limits; closes `pipes` whatever happens.

    The run's cgroup is `group_for(limits)` (default: a new one, `run_cgroup`),
    handed to `release` once the run is over (default: removed now).
    """
    try:
        return _run_owning_pipes(
            spec, stdin, cancel, pipes, starter, group_for or run_cgroup, release or remove_group
        )
    finally:
        if pipes is not None:  # ours since the call; closed at once after the start
            pipes.close()


def refuse_unrunnable(spec: SandboxSpec, stdin: bytes | None, pipes: Pipes | None) -> None:
    """SandboxError for a run that must not start: as root, or with two stdins."""
    if (spec.uid == 0 or spec.gid == 0) and spec.user_namespace is None:
        raise SandboxError(
            "sandboxed programs never run as root: give the spec a non-zero uid, or a user "
            "namespace whose root is an unprivileged host uid"
        )
    if pipes is not None and stdin is not None:
        raise SandboxError("a run reads either `stdin` bytes or `pipes`, not both")
    if pipes is not None and spec.stdin_seekable:
        raise SandboxError("a run joined to `pipes` has no stdin file to make seekable")


def _run_owning_pipes(
    spec: SandboxSpec,
    stdin: bytes | None,
    cancel: CancelToken | None,
    pipes: Pipes | None,
    starter: Starter,
    group_for: GroupMaker,
    release: GroupRelease,
) -> SandboxResult:
    refuse_unrunnable(spec, stdin, pipes)
    limits = spec.limits
    group = group_for(limits)
    status_r, status_w = os.pipe()
    stdin_file = -1
    try:
        if spec.stdin_seekable:
            stdin_file = sealed_memfd(stdin or b"")
            stdin = None  # nothing left to feed through a pipe
        start = starter(group, status_w)
        started = time.monotonic()
        try:
            proc = _start(start, stdin_file, stdin, pipes, (status_r, status_w))
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox: {exc}") from exc
        finally:
            if pipes is not None:  # the child has its copies: EOF follows its exit
                pipes.close()
            if stdin_file >= 0:  # the child has its own copy as descriptor 0
                os.close(stdin_file)
                stdin_file = -1
        os.close(status_w)
        status_w = -1
        outcome = _supervise(proc, started, stdin, limits, group, cancel)
        status_text = proc.status_text
        peak = group.peak_memory() if group is not None else None
        cpu = group.cpu_seconds() if group is not None else None
        oom = group.oom_killed() if group is not None else False
        # Read only where it decides the Status: a run killed by SIGKILL (see `classify`).
        hit_memory = group is not None and _killed(outcome.wait_status) and group.hit_memory_limit()
    finally:
        os.close(status_r)
        if status_w >= 0:
            os.close(status_w)
        if stdin_file >= 0:
            os.close(stdin_file)
        if group is not None:
            release(group)
    if child_pid(status_text) is None and outcome.killed_for is None:
        raise SandboxError(f"{start.failure}: " + outcome.stderr.decode(errors="replace").strip())
    ru = outcome.rusage
    if cpu is None:  # without cpuacct: what the box's processes reaped (a lower bound)
        cpu = ru.ru_utime + ru.ru_stime
    if peak is None:
        peak = ru.ru_maxrss * KiB
    return _result(outcome, limits, cpu, peak, oom, hit_memory, group is not None)


def _start(
    start: Start,
    stdin_file: int,
    stdin: bytes | None,
    pipes: Pipes | None,
    status: tuple[int, int],
) -> Child:
    """The run's process, started as `start` says, its stdin the file, bytes, pipe or nothing."""
    if start.spawn is None:
        popen = subprocess.Popen(
            start.argv,
            stdin=stdin_file if stdin_file >= 0 else _stdin_of(stdin, pipes),
            stdout=subprocess.PIPE if pipes is None else pipes.stdout_fd,
            stderr=subprocess.PIPE,
            pass_fds=(status[1], *start.pass_fds),
            env={"PATH": "/usr/bin:/bin"},
        )
        return PopenChild(popen, status[0])
    ours: list[int] = []  # the ends this process keeps, wrapped as the child's streams
    theirs: list[int] = []  # the ends the run takes, closed here once it has them
    try:
        if stdin_file >= 0:
            child_in = stdin_file
        elif pipes is not None:
            child_in = pipes.stdin_fd
        elif stdin:
            child_in, write_end = os.pipe()
            theirs.append(child_in)
            ours.append(write_end)
        else:
            child_in = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            theirs.append(child_in)
        if pipes is None:
            read_out, child_out = os.pipe()
            ours.append(read_out)
            theirs.append(child_out)
        else:
            child_out = pipes.stdout_fd
        read_err, child_err = os.pipe()
        ours.append(read_err)
        theirs.append(child_err)
        run = start.spawn((child_in, child_out, child_err), status)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    streams = iter(ours)
    if stdin_file < 0 and pipes is None and stdin:
        run.stdin = os.fdopen(next(streams), "wb", buffering=0)
    if pipes is None:
        run.stdout = os.fdopen(next(streams), "rb", buffering=0)
    run.stderr = os.fdopen(next(streams), "rb", buffering=0)
    return run


def _killed(wait_status: int) -> bool:
    """Whether the box ended by SIGKILL, itself or (as its pid 1 reports it) its program."""
    if os.WIFSIGNALED(wait_status):
        return os.WTERMSIG(wait_status) == signal.SIGKILL
    return split_exit_code(os.WEXITSTATUS(wait_status))[1] == signal.SIGKILL


def child_pid(status_text: bytes) -> int | None:
    """The `child-pid` of the box's JSON status records, None if it never reported one."""
    for line in status_text.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and "child-pid" in record:
                return int(record["child-pid"])
    return None


def _supervise(
    proc: Child,
    started: float,
    stdin: bytes | None,
    limits: Limits,
    group: RunCgroup | None,
    cancel: CancelToken | None,
) -> Outcome:
    def kill() -> None:
        # The namespace's pid 1 takes every process in it down with it; the
        # cgroup catches anything else; the box's starter goes last.
        if group is not None:
            group.kill_all()
        proc.kill()

    return supervise(
        proc,
        started=started,
        stdin=stdin,
        wall_seconds=limits.wall_seconds,
        stdout_cap=limits.stdout_bytes,
        stderr_cap=limits.stderr_bytes,
        kill=kill,
        cpu_used=group.cpu_seconds if group is not None and group.cpu else None,
        cpu_limit=limits.cpu_seconds,
        cancel=cancel,
    )


def cgroup_limits(limits: Limits) -> tuple[int | None, int | None, float | None, bool]:
    """(memory, processes, CPUs, whether CPU time is counted) of a run's cgroup for `limits`.

    The processes are sized for the box's own too; the box's pid 1 reaps the
    program and is never reaped by the starter, so rusage misses the program:
    CPU time needs cpuacct.
    """
    processes = None if limits.processes is None else limits.processes + SANDBOX_OWN_PROCESSES
    return limits.memory_bytes, processes, limits.cpus, limits.cpu_seconds is not None


def remove_group(group: RunCgroup) -> None:
    """Remove a run's cgroup (killing what is left in it); SandboxError if it cannot be."""
    try:
        group.remove()
    except OSError as exc:
        raise SandboxError(str(exc)) from exc


def run_cgroup(limits: Limits, pool: CgroupPool | None = None) -> RunCgroup | None:
    """A new cgroup for a run with `limits` (None where cgroups cannot be used).

    `pool`: a session's directories of finished runs, taken first (see `CgroupPool`).
    """
    memory, processes, cpus, account_cpu = cgroup_limits(limits)
    try:
        return RunCgroup.create(memory, processes, cpus, account_cpu=account_cpu, pool=pool)
    except OSError as exc:
        raise SandboxError(f"cannot create the run's cgroup: {exc}") from exc


def _stdin_of(stdin: bytes | None, pipes: Pipes | None) -> int:
    if pipes is not None:
        return pipes.stdin_fd
    return subprocess.PIPE if stdin else subprocess.DEVNULL


def _result(
    outcome: Outcome,
    limits: Limits,
    cpu: float,
    peak: int,
    oom: bool,
    hit_memory: bool,
    has_cgroup: bool,
) -> SandboxResult:
    ws = outcome.wait_status
    exit_code: int | None
    sig: int | None
    if os.WIFSIGNALED(ws):
        exit_code, sig = None, os.WTERMSIG(ws)
    else:
        # The box's pid 1 reports a program killed by signal N as exit code 128+N.
        exit_code, sig = split_exit_code(os.WEXITSTATUS(ws))
    status = classify(
        limits=limits,
        killed_for=outcome.killed_for,
        exit_code=exit_code,
        sig=sig,
        cpu=cpu,
        oom_killed=oom,
        memory_pressure=hit_memory,
        looks_out_of_memory=not has_cgroup and _looks_out_of_memory(outcome, limits, peak, sig),
    )
    return SandboxResult(
        status=status,
        exit_code=exit_code,
        signal=sig,
        cpu_seconds=cpu,
        wall_seconds=outcome.wall_seconds,
        peak_memory_bytes=peak,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated,
    )


def _looks_out_of_memory(outcome: Outcome, limits: Limits, peak: int, sig: int | None) -> bool:
    """Without a cgroup only RLIMIT_AS guards memory; guess from the symptoms.

    A refused allocation shows as an allocator message, or as a crash
    (SIGSEGV/SIGABRT) of a program whose resident size neared the limit.
    """
    if limits.memory_bytes is None:
        return False
    if _ALLOC_FAILURE.search(outcome.stderr):
        return True
    return sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL) and (
        peak >= 0.8 * limits.memory_bytes
    )
