"""Watch one sandboxed process: feed stdin, cap output, enforce the clocks.

Everything happens in the calling thread with one selector, so many runs can
proceed in parallel from a thread pool without extra threads per run. The
process's exit is observed through a pidfd, so a program that closes its
output and keeps running is still caught by the wall clock.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.capture import Capture
from atoll.core.sandbox.classify import Why
from atoll.core.sizes import KiB

_CHUNK = 64 * KiB


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
    proc: subprocess.Popen[bytes],
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
    """Run `proc` to completion (or until a limit), reap it, and report."""
    sel = selectors.DefaultSelector()
    pidfd = os.pidfd_open(proc.pid)
    outs = {"stdout": Capture(stdout_cap), "stderr": Capture(stderr_cap)}
    status = bytearray()
    open_streams = 0
    for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        if stream is not None:  # None: joined to a pipe of the caller's, not captured
            sel.register(stream.fileno(), selectors.EVENT_READ, name)
            open_streams += 1
    sel.register(pidfd, selectors.EVENT_READ, "exit")
    if status_read_fd is not None:
        sel.register(status_read_fd, selectors.EVENT_READ, "status")
    if cancel is not None:
        sel.register(cancel.fileno(), selectors.EVENT_READ, "cancel")
    pending_in = memoryview(stdin or b"")
    if proc.stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        if pending_in:
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        else:
            proc.stdin.close()

    deadline = None if wall_seconds is None else started + wall_seconds
    killed_for: str | None = None
    exited = False
    open_streams += status_read_fd is not None

    def stop(reason: str) -> None:
        nonlocal killed_for
        if killed_for is None:
            killed_for = reason
        kill()

    try:
        while not exited or open_streams:
            now = time.monotonic()
            timeout = None if deadline is None else max(deadline - now, 0.0)
            if cpu_used is not None and cpu_limit is not None and killed_for is None:
                timeout = cpu_poll_seconds if timeout is None else min(timeout, cpu_poll_seconds)
            if exited:  # only draining what is left in the pipes
                timeout = 1.0 if timeout is None else min(timeout, 1.0)
            events = sel.select(timeout)
            if not events:
                if deadline is not None and time.monotonic() >= deadline and killed_for is None:
                    stop(Why.WALL)
                    deadline = None
                    continue
                if exited:
                    break  # something still holds the pipes open; the run is over
            for key, _ in events:
                what = key.data
                if what == "cancel":
                    sel.unregister(key.fd)
                    stop(Why.CANCELLED)
                elif what == "exit":
                    exited = True
                    sel.unregister(pidfd)
                elif what == "stdin":
                    try:
                        n = os.write(key.fd, pending_in[:_CHUNK])
                        pending_in = pending_in[n:]
                    except (BrokenPipeError, BlockingIOError) as exc:
                        if isinstance(exc, BlockingIOError):
                            continue
                        pending_in = memoryview(b"")
                    if not pending_in:
                        sel.unregister(key.fd)
                        assert proc.stdin is not None
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
                else:
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fd)
                        open_streams -= 1
                    elif what == "status":
                        status += chunk
                    elif not outs[what].add(chunk):
                        stop(Why.OUTPUT)
            if cpu_used is not None and cpu_limit is not None and killed_for is None:
                used = cpu_used()
                if used is not None and used > cpu_limit:
                    stop(Why.CPU)
    finally:
        if not exited:
            kill()
        sel.close()
        os.close(pidfd)
        _, wait_status, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(wait_status)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return Outcome(
        wait_status=wait_status,
        rusage=rusage,
        wall_seconds=time.monotonic() - started,
        stdout=bytes(outs["stdout"].data),
        stderr=bytes(outs["stderr"].data),
        stdout_truncated=outs["stdout"].truncated,
        stderr_truncated=outs["stderr"].truncated,
        killed_for=killed_for,
        status_text=bytes(status),
    )
