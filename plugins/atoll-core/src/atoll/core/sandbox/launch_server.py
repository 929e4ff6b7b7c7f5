"""The session's launcher as a server: it forks each run's process instead of being exec'd.

Why: a run started by `subprocess.Popen` pays for this process's own fork
and an exec of the launcher (most of a millisecond here, with this thread
held), and every run drops the capability bounding set again. The server
(`launcher.c --serve`) does the exec and that drop once per session; each
run is then a fork of a small static process, born pid 1 of a pid namespace
of its own, which enters the box and starts the program. What a run is, is
unchanged: the same options, the same cgroups, namespaces, limits and status
record.

While a run runs, the server may fork the next run's process into that
run's cgroups ahead (`prepare`), so that joining them is off the next run's
path. A run's handle (`ServerRun`) is what `supervise` watches: a pidfd of the
run's pid 1 (sent by the server), its stdout and stderr pipes, and a `wait`
that reads the server's report once it has reaped the run.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import threading
from collections.abc import Sequence
from typing import IO

from atoll.core.sandbox.spec import SandboxError

_REPLY = 256


class LaunchServer:
    """One launcher process for a session's runs; `spawn` starts a run, one at a time."""

    def __init__(self, launcher: str, box: list[str], box_fds: tuple[int, ...]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [launcher, "--serve", str(theirs.fileno()), "--parent", str(os.getpid()), *box],
                pass_fds=(theirs.fileno(), *box_fds),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={"PATH": "/usr/bin:/bin"},
            )
        except OSError as exc:
            ours.close()
            raise SandboxError(f"cannot start the sandbox launcher: {exc}") from exc
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self.broken = False  # the protocol failed: the session starts another server

    def spawn(
        self,
        options: list[str],
        stdio: tuple[int, int, int],
        status_w: int,
        prepared: str | None = None,
    ) -> ServerRun:
        """Start a run of `options` (the launcher's per-run options, `--`, the command).

        `prepared`: the token of the `prepare` whose process, in this run's
        cgroups, takes the run (should it have died, a new one joins them now).
        """
        head = ("run",) if prepared is None else ("prepared", prepared)
        payload = b"\0".join(word.encode() for word in (*head, *options))
        with self._lock:
            try:
                socket.send_fds(self._sock, [payload], [*stdio, status_w])
                text, fds, _, _ = socket.recv_fds(self._sock, _REPLY, 1)
            except OSError as exc:
                self.broken = True
                raise SandboxError(
                    f"the session's launcher is gone: {exc}; {self._gone()}"
                ) from exc
        words = text.decode().split()
        if len(words) != 2 or words[0] != "pid" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            self.broken = True
            raise SandboxError(f"the session's launcher did not start the run; {self._gone()}")
        return ServerRun(self, int(words[1]), fds[0])

    def prepare(self, token: str, procs_files: Sequence[str], tmpfs_bytes: int | None) -> None:
        """Have a later run's process forked now, known by `token`: in these cgroups, in the box.

        It joins the cgroups, enters a copy of the box with fresh namespaces,
        /proc and a `/tmp` of `tmpfs_bytes` (None: the default size), then
        waits for its run (`spawn(..., prepared=token)`), which finds all that
        done. Made while the CPUs have time to spare (the run before runs, a
        program compiles), that work is off the run's path; and on cgroup v1
        joining a cgroup from outside waits for an RCU grace period, which is
        milliseconds when the CPUs are busy.
        """
        words = ["prepare", token]
        if tmpfs_bytes is not None:
            words += ["--tmpfs", str(tmpfs_bytes)]
        for name in procs_files:
            words += ["--cgroup", name]
        payload = b"\0".join(word.encode() for word in words)
        with self._lock:
            try:
                self._sock.sendmsg([payload])
            except OSError as exc:
                self.broken = True
                raise SandboxError(f"the session's launcher is gone: {exc}") from exc

    def report(self) -> tuple[int, resource.struct_rusage]:
        """The wait status and resource use of the run just reaped (blocks until it is)."""
        try:
            text = self._sock.recv(_REPLY).decode()
        except OSError as exc:
            self.broken = True
            raise SandboxError(f"the session's launcher is gone: {exc}") from exc
        words = text.split()
        if len(words) != 5 or words[0] != "exit":
            self.broken = True
            raise SandboxError(f"the session's launcher did not report the run; {self._gone()}")
        status, utime, stime, maxrss = (int(word) for word in words[1:])
        rusage = resource.struct_rusage((utime / 1e6, stime / 1e6, maxrss) + (0,) * 13)
        return status, rusage

    def close(self) -> None:
        """End the server (closing its socket ends it), and wait for it."""
        self._sock.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stderr is not None:
            self._proc.stderr.close()

    def _gone(self) -> str:
        if self._proc.poll() is None:
            return "it still runs"
        assert self._proc.stderr is not None
        message = self._proc.stderr.read().decode(errors="replace").strip()
        return f"it exited with {self._proc.returncode}: {message or '(no message)'}"


class ServerRun:
    """A run started by a `LaunchServer`, as `supervise` watches it (see `supervise.Child`)."""

    def __init__(self, server: LaunchServer, pid: int, pidfd: int) -> None:
        self.server = server
        self.pid = pid
        self.pidfd = pidfd
        self.stdin: IO[bytes] | None = None
        self.stdout: IO[bytes] | None = None
        self.stderr: IO[bytes] | None = None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def wait(self) -> tuple[int, resource.struct_rusage]:
        return self.server.report()
