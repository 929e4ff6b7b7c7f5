"""Watch one sandboxed process: feed stdin, cap output, enforce the clocks.

Everything happens in the calling thread with one poll set, so many runs can
proceed in parallel from a thread pool without extra threads per run. The
run's end is observed through a descriptor of its own (a pidfd, or the
hang-up of a status pipe), not through its output, so a program that closes
its output and keeps running is still caught by the wall clock. The process
is a `Child`: one this process started (`PopenChild`), or one a session's
launcher server forked for it (`launch_server.ServerRun`).
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import select
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
    """A started process as `supervise` watches it: its end, its pipes, a kill, a wait."""

    exit_fd: int  # polled for `exit_events` (or a hang-up): the run is over; `supervise` closes it
    exit_events: int
    stdin: IO[bytes] | None  # where stdin bytes are written, if any
    stdout: IO[bytes] | None  # None: joined to a descriptor of the caller's
    stderr: IO[bytes] | None
    status_text: bytes  # the box's status records, once `wait` has returned

    def kill(self) -> None:
        """SIGKILL the process (nothing if it is gone)."""

    def wait(self) -> tuple[int, resource.struct_rusage]:
        """Reap the process: its wait status and resource use."""


class PopenChild:
    """A `subprocess.Popen` child as a `Child`; `status_r`: the box's status pipe."""

    exit_events = select.POLLIN  # a pidfd turns readable when its process exits

    def __init__(self, proc: subprocess.Popen[bytes], status_r: int) -> None:
        self.proc = proc
        self.exit_fd = os.pidfd_open(proc.pid)
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr
        self._status_r = status_r
        self.status_text = b""

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)

    def wait(self) -> tuple[int, resource.struct_rusage]:
        _, wait_status, rusage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(wait_status)
        self.status_text = written(self._status_r)
        return wait_status, rusage


def written(fd: int) -> bytes:
    """What is in the pipe `fd` now, without waiting for more (its writer may live on)."""
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    return b"".join(chunks)


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


def supervise(
    proc: Child,
    *,
    started: float,
    stdin: bytes | None,
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
    watch.register(cancel)
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
            events = watch.poll(_select_timeout(deadline, cpu_wait, watch.exited))
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
            for fd, _ in events:
                watch.handle(fd)
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
    """One supervised run's poll set and what it saw: output, stdin left, why it was stopped.

    `names` says what each descriptor is ("stdout", "stderr", "stdin", "exit"
    for the run's end, "cancel"), so that one event is handled by one method.
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
        self._poll = select.poll()
        self.names: dict[int, str] = {}
        self.exit_fd = proc.exit_fd
        self.outs = {"stdout": Capture(stdout_cap), "stderr": Capture(stderr_cap)}
        self.pending_in = memoryview(stdin or b"")
        self.open_streams = 0  # captured streams not yet at end-of-file
        self.killed_for: str | None = None
        self.exited = False

    def register(self, cancel: CancelToken | None) -> None:
        """Watch the output pipes, the exit, the cancel token, and stdin."""
        proc = self.proc
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            if stream is not None:  # None: joined to a pipe of the caller's, not captured
                self._watch(stream.fileno(), select.POLLIN, name)
                self.open_streams += 1
        self._watch(self.exit_fd, proc.exit_events, "exit")
        if cancel is not None:
            self._watch(cancel.fileno(), select.POLLIN, "cancel")
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if self.pending_in:
                self._watch(proc.stdin.fileno(), select.POLLOUT, "stdin")
            else:
                proc.stdin.close()

    def _watch(self, fd: int, events: int, name: str) -> None:
        self._poll.register(fd, events)
        self.names[fd] = name

    def _unwatch(self, fd: int) -> None:
        self._poll.unregister(fd)
        del self.names[fd]

    def poll(self, timeout: float | None) -> list[tuple[int, int]]:
        """The descriptors with events, waiting up to `timeout` seconds (None: for ever)."""
        return self._poll.poll(None if timeout is None else max(0, math.ceil(timeout * 1000)))

    def stop(self, reason: str) -> None:
        """Kill the process; the first reason given is the one reported."""
        if self.killed_for is None:
            self.killed_for = reason
        self.kill()

    def handle(self, fd: int) -> None:
        what = self.names.get(fd)
        if what == "cancel":
            self._unwatch(fd)
            self.stop(Why.CANCELLED)
        elif what == "exit":
            self.exited = True
            self._unwatch(fd)
        elif what == "stdin":
            self._write_stdin(fd)
        elif what is not None:
            self._read(fd, what)

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
            self._unwatch(fd)
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _read(self, fd: int, what: str) -> None:
        """Take one chunk of output; stop the process when its output is over the cap."""
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            self._unwatch(fd)
            self.open_streams -= 1
        elif not self.outs[what].add(chunk):
            self.stop(Why.OUTPUT)

    def reap(self) -> tuple[int, resource.struct_rusage]:
        """Kill the process if it still runs, wait for it, close everything; its wait status."""
        if not self.exited:
            self.kill()
        os.close(self.exit_fd)
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
        )
