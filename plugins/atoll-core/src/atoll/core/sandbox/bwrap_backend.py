"""The bubblewrap backend: namespaces, a tmpfs root, a per-run cgroup and rlimits.

Needs no container engine, only `bwrap` and `setpriv` and root (to switch to
the spec's unprivileged uid). A run costs a few milliseconds over a plain
subprocess, which matters when a judge runs dozens of programs per submission.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.bwrap_argv import bwrap_argv
from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.cgroups import RunCgroup, created_groups
from atoll.core.sandbox.classify import classify, split_exit_code
from atoll.core.sandbox.seekable_stdin import sealed_memfd
from atoll.core.sandbox.spec import (
    Limits,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    Status,
)
from atoll.core.sandbox.supervise import Outcome, supervise
from atoll.core.sizes import KiB

# What allocation failures look like when only RLIMIT_AS guards memory.
_ALLOC_FAILURE = re.compile(
    rb"bad_alloc|MemoryError|Cannot allocate memory|out of memory|memory exhausted",
    re.IGNORECASE,
)

# The shell that joins the cgroups and sets rlimits before `exec bwrap`: dash
# starts in about a millisecond; bash is the fallback.
_SHELL = next((s for s in ("/bin/dash", "/usr/bin/dash") if os.path.exists(s)), "/bin/bash")

# Arms the parent-death signal before the shell runs (see `_prelude`).
_DIE_WITH_US = ("setpriv", "--pdeathsig", "KILL", "--")

# bwrap, its pid-1 reaper and the program's first process share the pids budget.
_SANDBOX_OWN_PROCESSES = 2


def _prelude(limits: Limits, group: RunCgroup | None, userns: tuple[int, str] | None = None) -> str:
    """Shell lines run just before `exec bwrap`: join the cgroups, set rlimits, open the userns.

    The shell runs under `setpriv --pdeathsig KILL`, so it dies with this
    process; its first line checks that this process was still its parent
    once that was armed. Without both, a parent killed while the shell ran
    left a bwrap that `--die-with-parent` ties to nobody: a program under no
    supervisor and no wall clock, for ever.
    """
    lines = ["set -e", f'[ "$PPID" = "{os.getpid()}" ] || exit 125']
    if userns is not None:
        digit, path = userns
        lines.append(f"exec {digit}<{shlex.quote(path)}")
    if group is not None:
        lines += [f"echo $$ > {shlex.quote(str(p))}" for p in group.procs_files()]
    if limits.cpu_seconds is not None:
        soft = max(1, math.ceil(limits.cpu_seconds))
        lines += [f"ulimit -S -t {soft}", f"ulimit -H -t {soft + 1}"]
    if limits.stack_bytes is not None:
        lines.append(f"ulimit -s {max(1, limits.stack_bytes // KiB)}")
    address_space = limits.address_space_bytes
    if limits.memory_bytes is not None and (group is None or group.memory is None):
        # Without a memory cgroup, RLIMIT_AS is the only memory guard left.
        fallback = limits.memory_bytes
        address_space = fallback if address_space is None else min(address_space, fallback)
    if address_space is not None:
        lines.append(f"ulimit -v {max(1, address_space // KiB)}")
    if limits.processes is not None and (group is None or not group.limits_processes):
        flag = "-p" if _SHELL.endswith("dash") else "-u"  # dash spells RLIMIT_NPROC -p
        lines.append(f"ulimit {flag} {limits.processes + _SANDBOX_OWN_PROCESSES}")
    if limits.file_size_bytes is not None:
        lines.append(f"ulimit -f {max(1, math.ceil(limits.file_size_bytes / 512))}")
    if limits.open_files is not None:
        lines.append(f"ulimit -n {limits.open_files}")
    lines.append('exec "$@"')
    return "\n".join(lines)


def _child_pid(status_text: bytes) -> int | None:
    for line in status_text.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and "child-pid" in record:
                return int(record["child-pid"])
    return None


class BwrapBackend(SandboxBackend):
    """Runs each command in fresh bubblewrap namespaces as an unprivileged uid."""

    name = "bwrap"
    supports_pipes = True

    def __init__(self) -> None:
        self._checked = False
        self._check_lock = threading.Lock()

    def check(self) -> None:
        with self._check_lock:
            if self._checked:
                return
            for tool, package in (("bwrap", "bubblewrap"), ("setpriv", "util-linux")):
                if shutil.which(tool) is None:
                    raise SandboxError(
                        f"`{tool}` is not installed; install it with `apt-get install {package}`"
                    )
            if os.geteuid() != 0:
                raise SandboxError(
                    "the bwrap backend must run as root to switch sandboxed programs to an "
                    "unprivileged uid; run as root or use the docker backend"
                )
            probe = self._run(["/bin/true"], SandboxSpec(), None)
            if probe.status is not Status.OK:
                raise SandboxError(
                    "bubblewrap cannot start a sandbox here: "
                    + probe.stderr.decode(errors="replace").strip()
                )
            self._checked = True

    def run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None = None,
        *,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        try:
            self.check()
        except SandboxError:
            if pipes is not None:
                pipes.close()
            raise
        return self._run(argv, spec, stdin, cancel, pipes)

    def leftovers(self) -> list[str]:
        """This process's per-run cgroups that still exist."""
        return [str(group) for group in created_groups()]

    def _run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None,
        cancel: CancelToken | None = None,
        pipes: Pipes | None = None,
    ) -> SandboxResult:
        try:
            return self._run_owning_pipes(argv, spec, stdin, cancel, pipes)
        finally:
            if pipes is not None:  # ours since the call; closed at once after the start
                pipes.close()

    def _run_owning_pipes(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None,
        cancel: CancelToken | None,
        pipes: Pipes | None,
    ) -> SandboxResult:
        _refuse_unrunnable(spec, stdin, pipes)
        limits = spec.limits
        group = _run_cgroup(limits)
        status_r, status_w = os.pipe()
        stdin_file = -1
        try:
            if spec.stdin_seekable:
                stdin_file = sealed_memfd(stdin or b"")
                stdin = None  # nothing left to feed through a pipe
            userns = None
            if spec.user_namespace is not None:
                # A descriptor number the prelude can open the namespace on: any digit but status_w.
                userns = (9 if status_w != 9 else 8, spec.user_namespace)
            command = bwrap_argv(
                argv,
                spec,
                status_fd=status_w,
                tmpfs_bytes=limits.memory_bytes,
                userns_fd=userns[0] if userns else None,
            )
            started = time.monotonic()
            try:
                proc = subprocess.Popen(
                    [
                        *_DIE_WITH_US,
                        _SHELL,
                        "-c",
                        _prelude(limits, group, userns),
                        "sandbox",
                        *command,
                    ],
                    stdin=stdin_file if stdin_file >= 0 else _stdin_of(stdin, pipes),
                    stdout=subprocess.PIPE if pipes is None else pipes.stdout_fd,
                    stderr=subprocess.PIPE,
                    pass_fds=(status_w,),
                    env={"PATH": "/usr/bin:/bin"},
                )
            except OSError as exc:
                raise SandboxError(f"cannot start bubblewrap: {exc}") from exc
            finally:
                if pipes is not None:  # the child has its copies: EOF follows its exit
                    pipes.close()
                if stdin_file >= 0:  # the child has its own copy as descriptor 0
                    os.close(stdin_file)
                    stdin_file = -1
            os.close(status_w)
            status_w = -1
            outcome = self._supervise(proc, started, stdin, status_r, limits, group, cancel)
            peak = group.peak_memory() if group is not None else None
            cpu = group.cpu_seconds() if group is not None else None
            oom = group.oom_killed() if group is not None else False
            hit_memory = group.hit_memory_limit() if group is not None else False
        finally:
            os.close(status_r)
            if status_w >= 0:
                os.close(status_w)
            if stdin_file >= 0:
                os.close(stdin_file)
            if group is not None:
                try:
                    group.remove()
                except OSError as exc:
                    raise SandboxError(str(exc)) from exc
        if _child_pid(outcome.status_text) is None and outcome.killed_for is None:
            raise SandboxError(
                "bubblewrap could not set up the sandbox: "
                + outcome.stderr.decode(errors="replace").strip()
            )
        ru = outcome.rusage
        if cpu is None:  # without cpuacct: what bwrap itself reaped (a lower bound)
            cpu = ru.ru_utime + ru.ru_stime
        if peak is None:
            peak = ru.ru_maxrss * KiB
        return _result(outcome, limits, cpu, peak, oom, hit_memory, group is not None)

    def _supervise(
        self,
        proc: subprocess.Popen[bytes],
        started: float,
        stdin: bytes | None,
        status_r: int,
        limits: Limits,
        group: RunCgroup | None,
        cancel: CancelToken | None,
    ) -> Outcome:
        def kill() -> None:
            # The namespace's pid 1 takes every process in it down with it; the
            # cgroup catches anything else; bwrap itself goes last.
            if group is not None:
                group.kill_all()
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)

        return supervise(
            proc,
            started=started,
            stdin=stdin,
            status_read_fd=status_r,
            wall_seconds=limits.wall_seconds,
            stdout_cap=limits.stdout_bytes,
            stderr_cap=limits.stderr_bytes,
            kill=kill,
            cpu_used=group.cpu_seconds if group is not None and group.cpu else None,
            cpu_limit=limits.cpu_seconds,
            cancel=cancel,
        )


def _refuse_unrunnable(spec: SandboxSpec, stdin: bytes | None, pipes: Pipes | None) -> None:
    """SandboxError for a run this backend must not start: as root, or with two stdins."""
    if (spec.uid == 0 or spec.gid == 0) and spec.user_namespace is None:
        raise SandboxError(
            "sandboxed programs never run as root: give the spec a non-zero uid, or a user "
            "namespace whose root is an unprivileged host uid"
        )
    if pipes is not None and stdin is not None:
        raise SandboxError("a run reads either `stdin` bytes or `pipes`, not both")
    if pipes is not None and spec.stdin_seekable:
        raise SandboxError("a run joined to `pipes` has no stdin file to make seekable")


def _run_cgroup(limits: Limits) -> RunCgroup | None:
    """The run's own cgroup (None where cgroups cannot be used), sized for bwrap's processes too."""
    processes = None if limits.processes is None else limits.processes + _SANDBOX_OWN_PROCESSES
    try:
        # bubblewrap's own pid 1 reaps the program and is never reaped by
        # bwrap, so rusage misses the program: CPU time needs cpuacct.
        return RunCgroup.create(
            limits.memory_bytes,
            processes,
            limits.cpus,
            account_cpu=limits.cpu_seconds is not None,
        )
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
        # bubblewrap reports a program killed by signal N as exit code 128+N.
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
