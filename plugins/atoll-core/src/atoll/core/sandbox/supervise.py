"""Watch one sandboxed process: feed stdin, cap output, enforce the clocks.

Everything happens in the calling thread with one selector, so many runs can
proceed in parallel from a thread pool without extra threads per run. The
process's exit is observed through a pidfd, so a program that closes its
output and keeps running is still caught by the wall clock. The process is a
`Child`: one this process started (`PopenChild`), or one a session's launcher
server forked for it (`launch_server.ServerRun`).
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Protocol

from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.capture import Capture
from atoll.core.sandbox.classify import Why
from atoll.core.sizes import KiB

_CHUNK = 64 * KiB


class Child(Protocol):
    """A started process as `supervise` watches it: its pidfd and pipes, a kill, a wait."""

    pidfd: int  # readable once the process has exited; `supervise` closes it
    stdin: IO[bytes] | None  # where stdin bytes are written, if any
    stdout: IO[bytes] | None  # None: joined to a descriptor of the caller's
    stderr: IO[bytes] | None

    def kill(self) -> None:
        """SIGKILL the process (nothing if it is gone)."""

    def wait(self) -> tuple[int, resource.struct_rusage]:
        """Reap the process: its wait status and resource use."""


class PopenChild:
    """A `subprocess.Popen` child as a `Child`."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pidfd = os.pidfd_open(proc.pid)
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)

    def wait(self) -> tuple[int, resource.struct_rusage]:
        _, wait_status, rusage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(wait_status)
        return wait_status, rusage


@dataclass
class Outcome:
    wait_status: int
    rusage: resource.struct_rusage
    wall_seconds: float
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    killed_for: str | None
    status_text: bytes


def supervise(
    proc: Child,
    *,
    started: float,
    stdin: bytes | None,
    status_read_fd: int | None,
    wall_seconds: float | None,
    stdout_cap: int,
    stderr_cap: int,
    kill: Callable[[], None],
    cpu_used: Callable[[], float | None] | None = None,
    cpu_limit: float | None = None,
    cpu_poll_seconds: float = 0.1,
    cancel: CancelToken | None = None,
) -> Outcome:
    """Run `proc` to completion (or until a limit), reap it, and report.

    CPU time is polled every `cpu_poll_seconds` while the process runs (its
    total is read once more after it ends), not after every chunk of output:
    a short run would spend more on reading its counters than on running.
    """
    watch = _Watch(proc, kill, stdin, stdout_cap, stderr_cap)
    watch.register(status_read_fd, cancel)
    deadline = None if wall_seconds is None else started + wall_seconds
    next_cpu_poll = started + cpu_poll_seconds
    try:
        while not watch.exited or watch.open_streams:
            polls_cpu = (
                cpu_used is not None
                and cpu_limit is not None
                and watch.killed_for is None
                and not watch.exited
            )
            cpu_wait = max(next_cpu_poll - time.monotonic(), 0.0) if polls_cpu else None
            events = watch.sel.select(_select_timeout(deadline, cpu_wait, watch.exited))
            if not events:
                if (
                    deadline is not None
                    and time.monotonic() >= deadline
                    and watch.killed_for is None
                ):
                    watch.stop(Why.WALL)
                    deadline = None
                    continue
                if watch.exited and not polls_cpu:
                    break  # something still holds the pipes open; the run is over
            for key, _ in events:
                watch.handle(key)
            if polls_cpu and cpu_used is not None and time.monotonic() >= next_cpu_poll:
                next_cpu_poll = time.monotonic() + cpu_poll_seconds
                used = cpu_used()
                if used is not None and cpu_limit is not None and used > cpu_limit:
                    watch.stop(Why.CPU)
    finally:
        wait_status, rusage = watch.reap()
    return watch.outcome(wait_status, rusage, time.monotonic() - started)


def _select_timeout(deadline: float | None, cpu_wait: float | None, draining: bool) -> float | None:
    """How long one select may wait: to the wall deadline, the next CPU poll, 1 s while draining."""
    timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
    if cpu_wait is not None:
        timeout = cpu_wait if timeout is None else min(timeout, cpu_wait)
    if draining:  # the process exited: only draining what is left in the pipes
        timeout = 1.0 if timeout is None else min(timeout, 1.0)
    return timeout


class _Watch:
    """One supervised run's selector and what it saw: output, status, stdin left, why it was stopped.

    The selector's keys name what each descriptor is ("stdout", "stderr",
    "status", "stdin", "exit" for the pidfd, "cancel"), so that one event is
    handled by one method.
    """

    def __init__(
        self,
        proc: Child,
        kill: Callable[[], None],
        stdin: bytes | None,
        stdout_cap: int,
        stderr_cap: int,
    ) -> None:
        self.proc = proc
        self.kill = kill
        # poll(2) rather than epoll: a run watches a handful of descriptors for a moment, and
        # epoll would add a system call to make its set and one per change to it.
        self.sel = selectors.PollSelector()
        self.pidfd = proc.pidfd
        self.outs = {"stdout": Capture(stdout_cap), "stderr": Capture(stderr_cap)}
        self.status = bytearray()
        self.pending_in = memoryview(stdin or b"")
        self.open_streams = 0  # captured streams and the status pipe not yet at end-of-file
        self.killed_for: str | None = None
        self.exited = False

    def register(self, status_read_fd: int | None, cancel: CancelToken | None) -> None:
        """Watch the output pipes, the exit, the status pipe, the cancel token, and stdin."""
        proc, sel = self.proc, self.sel
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            if stream is not None:  # None: joined to a pipe of the caller's, not captured
                sel.register(stream.fileno(), selectors.EVENT_READ, name)
                self.open_streams += 1
        sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        if status_read_fd is not None:
            sel.register(status_read_fd, selectors.EVENT_READ, "status")
            self.open_streams += 1
        if cancel is not None:
            sel.register(cancel.fileno(), selectors.EVENT_READ, "cancel")
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if self.pending_in:
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
            else:
                proc.stdin.close()

    def stop(self, reason: str) -> None:
        """Kill the process; the first reason given is the one reported."""
        if self.killed_for is None:
            self.killed_for = reason
        self.kill()

    def handle(self, key: selectors.SelectorKey) -> None:
        what = key.data
        if what == "cancel":
            self.sel.unregister(key.fd)
            self.stop(Why.CANCELLED)
        elif what == "exit":
            self.exited = True
            self.sel.unregister(self.pidfd)
        elif what == "stdin":
            self._write_stdin(key.fd)
        else:
            self._read(key.fd, what)

    def _write_stdin(self, fd: int) -> None:
        """Write the next chunk of stdin; close it once all is written or the reader is gone."""
        try:
            n = os.write(fd, self.pending_in[:_CHUNK])
            self.pending_in = self.pending_in[n:]
        except BlockingIOError:
            return
        except BrokenPipeError:
            self.pending_in = memoryview(b"")
        if not self.pending_in:
            self.sel.unregister(fd)
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _read(self, fd: int, what: str) -> None:
        """Take one chunk of output or status; stop the process when its output is over the cap."""
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            self.sel.unregister(fd)
            self.open_streams -= 1
        elif what == "status":
            self.status += chunk
        elif not self.outs[what].add(chunk):
            self.stop(Why.OUTPUT)

    def reap(self) -> tuple[int, resource.struct_rusage]:
        """Kill the process if it still runs, wait for it, close everything; its wait status."""
        if not self.exited:
            self.kill()
        self.sel.close()
        os.close(self.pidfd)
        try:
            wait_status, rusage = self.proc.wait()
        finally:
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        return wait_status, rusage

    def outcome(
        self, wait_status: int, rusage: resource.struct_rusage, wall_seconds: float
    ) -> Outcome:
        return Outcome(
            wait_status=wait_status,
            rusage=rusage,
            wall_seconds=wall_seconds,
            stdout=bytes(self.outs["stdout"].data),
            stderr=bytes(self.outs["stderr"].data),
            stdout_truncated=self.outs["stdout"].truncated,
            stderr_truncated=self.outs["stderr"].truncated,
            killed_for=self.killed_for,
            status_text=bytes(self.status),
        )
