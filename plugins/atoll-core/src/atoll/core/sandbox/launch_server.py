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
path. A run's handle (`ServerRun`) is what `supervise` watches: its stdout and
stderr pipes, and the hang-up of its status pipe. The run's pid 1 writes the
start of the program there, then, once it has reaped the program and no
other process is left, how the program ended, and closes it: the run is
over for the caller then, before its namespaces are torn down in the
kernel, and without a word through the server. The server answers nothing
but a report once it has reaped the run's pid 1, which the next spawn takes
first (a run never overlaps the one before, which may hold sockets in the
box's network). So a short run wakes the thread that waits for it once,
when it has ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import threading
from collections.abc import Sequence
from typing import IO

from atoll.core.sandbox.spec import SandboxError
from atoll.core.sandbox.supervise import written

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
        # Reports of runs already over for the caller (their pid 1 wrote how they ended),
        # taken before the next run starts: by then its pid 1 is gone, and all it held.
        self._owed = 0

    def spawn(
        self,
        options: list[str],
        stdio: tuple[int, int, int],
        status: tuple[int, int],
        prepared: str | None = None,
    ) -> ServerRun:
        """Start a run of `options` (the launcher's per-run options, `--`, the command).

        `status`: the read and write ends of the run's status pipe.
        `prepared`: the token of the `prepare` whose process, in this run's
        cgroups, takes the run (should it have died, a new one joins them now).
        """
        self.settle()
        head = ("run",) if prepared is None else ("prepared", prepared)
        payload = b"\0".join(word.encode() for word in (*head, *options))
        with self._lock:
            try:
                socket.send_fds(self._sock, [payload], [*stdio, status[1]])
            except OSError as exc:
                self.broken = True
                raise SandboxError(
                    f"the session's launcher is gone: {exc}; {self._gone()}"
                ) from exc
        return ServerRun(self, status[0])

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

    def settle(self) -> None:
        """Take the reports owed (blocks until the runs over have their pid 1s reaped).

        After it, nothing of those runs is left: their cgroups are empty.
        """
        while self._owed:
            self.report()
            self._owed -= 1

    def owe_report(self) -> None:
        """The run in flight is over for its caller: its report is taken before the next starts."""
        self._owed += 1

    def kill(self) -> None:
        """Have the run in flight killed (nothing if the server is gone: so is the run)."""
        with self._lock, contextlib.suppress(OSError):
            self._sock.send(b"kill")

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
        return status, _rusage(utime, stime, maxrss)

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
    """A run started by a `LaunchServer`, as `supervise` watches it (see `supervise.Child`).

    It is over when its status pipe hangs up: its pid 1 has closed it, having
    reaped the program and found no other process left, and written how the
    program ended; or its pid 1 has exited with processes left (which die with
    it) or been killed, and then the server's report says how, once it has
    reaped it.
    """

    #: Only the hang-up: the pipe is readable as soon as the program starts.
    exit_events = 0

    def __init__(self, server: LaunchServer, status_r: int) -> None:
        self.server = server
        self._status_r = status_r
        self.exit_fd = os.dup(status_r)
        self.stdin: IO[bytes] | None = None
        self.stdout: IO[bytes] | None = None
        self.stderr: IO[bytes] | None = None
        self.status_text = b""

    def kill(self) -> None:
        self.server.kill()

    def wait(self) -> tuple[int, resource.struct_rusage]:
        self.status_text = written(self._status_r)
        ended = _end_record(self.status_text)
        if ended is not None:
            self.server.owe_report()
            return ended
        ended = self.server.report()  # its pid 1 died: all it wrote is there now
        self.status_text += written(self._status_r)
        return ended


def _end_record(status_text: bytes) -> tuple[int, resource.struct_rusage] | None:
    """The wait status and resource use of the status record's last line (see `launcher.c`)."""
    lines = status_text.splitlines()
    if not lines or not lines[-1].startswith(b'{ "exit-code"'):
        return None
    try:
        record = json.loads(lines[-1])
        code, utime, stime, maxrss = (
            int(record[key]) for key in ("exit-code", "utime-us", "stime-us", "maxrss-kb")
        )
    except (ValueError, KeyError):
        return None
    return (code & 0xFF) << 8, _rusage(utime, stime, maxrss)  # as pid 1 exiting with `code`


def _rusage(utime_us: int, stime_us: int, maxrss_kb: int) -> resource.struct_rusage:
    """The resource use the launcher reports (microseconds, KiB), as `os.wait4` gives it."""
    return resource.struct_rusage((utime_us / 1e6, stime_us / 1e6, maxrss_kb) + (0,) * 13)
