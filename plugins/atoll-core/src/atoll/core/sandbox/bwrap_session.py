"""A bubblewrap session: the box is built once, each run starts in a private copy of it.

The box is bubblewrap's own (the same root, system binds, /proc, /dev, the
spec's mounts, a network namespace of loopback only), built by bubblewrap
once and then held by descriptors of its mount, network and UTS namespaces:
no process stays in it. A run's process is forked by the session's launcher
server (`launcher.c`, `launch_server`) as pid 1 of a pid namespace of its
own: it joins the run's cgroup (made, and joined, while the run before still
ran), enters the box's network and hostname and a copy of its mounts, with
fresh IPC and cgroup namespaces, a fresh /tmp and /proc, the run's own
mounts on the slots, then starts the program with the run's rlimits as the
spec's uid, without capabilities. The per-run cgroup,
the supervision, the counters and the Status are those of a run in a box of
its own (`bwrap_run`), so limits and verdicts are the same either way.

What a run leaves is gone before the next starts: its processes die with
its pid namespace's pid 1 (the next run starts once the server has reaped
that; the run's cgroup, empty then, is removed later), its /tmp,
/proc and mounts with its mount namespace, its IPC objects with its IPC
namespace. The box's own mounts are read-only to a run (and its root is
left as it is by the launcher), so nothing written reaches the next run but
through the spec's writable mounts. Runs of a session share the network
namespace, which is why they never overlap: sockets die with their processes.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import select
import subprocess
import threading
from collections.abc import Sequence

from atoll.core.sandbox.bwrap_argv import box_env, box_options
from atoll.core.sandbox.bwrap_run import (
    Spawn,
    Start,
    Starter,
    cgroup_limits,
    run_cgroup,
    run_in_box,
)
from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.cgroups import CgroupPool, RunCgroup
from atoll.core.sandbox.launch_server import LaunchServer
from atoll.core.sandbox.launcher import launcher_path
from atoll.core.sandbox.rlimits import run_rlimits
from atoll.core.sandbox.session import SandboxSession
from atoll.core.sandbox.spec import (
    Limits,
    Mount,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    mount_target,
)
from atoll.core.sandbox.supervise import Child
from atoll.core.sizes import MiB

# The cgroup directories open sessions hold: those kept ready for their next runs, and the
# last run's, emptied and removed (or kept for the next runs) once its pid 1 has been
# reaped. Not what a finished run left behind (`BwrapBackend.leftovers`), though the reaper
# takes them like any other.
_spares: set[str] = set()
_spares_lock = threading.Lock()


def spare_groups() -> set[str]:
    """The cgroup directories open sessions of this process hold (see `_spares`)."""
    with _spares_lock:
        return set(_spares)


def _hold_spare(group: RunCgroup | None, held: bool) -> None:
    if group is not None:
        _hold_dirs(group.dir_names, held)


def _hold_dirs(dir_names: Sequence[str], held: bool) -> None:
    with _spares_lock:
        if held:
            _spares.update(dir_names)
        else:
            _spares.difference_update(dir_names)


# The namespaces a run enters (the rest it gets fresh), by their /proc/<pid>/ns names.
_SHARED = ("mnt", "net", "uts")
#: The most runs a session prepares ahead (each a process waiting in its namespaces).
MAX_PREPARED = 40
#: The most finished runs' cgroups a session keeps for its next `warm` to remove.
MAX_RETIRED = MAX_PREPARED
_READY_SECONDS = 30.0
# The box's own /tmp is never seen (each run mounts its own over it).
_TEMPLATE_TMPFS = 1 * MiB


class BoxTemplate:
    """A bubblewrap box held by descriptors of its namespaces, with no process in it."""

    def __init__(self, spec: SandboxSpec, slots: Sequence[str]) -> None:
        if spec.user_namespace is not None:
            raise SandboxError("a bwrap session cannot run in a user namespace; use backend.run")
        self.fds: dict[str, int] = {}
        status_r, status_w = os.pipe()
        try:
            try:
                argv = box_options(
                    dataclasses.replace(spec, workdir="/"),
                    caps=(),
                    status_fd=status_w,
                    tmpfs_bytes=_TEMPLATE_TMPFS,
                    mount_points=slots,
                )
            except BaseException:
                os.close(status_w)
                raise
            # The holder says the box is built, then waits for us to close its stdin.
            holder = ["/bin/sh", "-c", "echo ready; exec cat >/dev/null"]
            self._build([*argv, *holder], status_r, status_w)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(status_r)

    def _build(self, argv: list[str], status_r: int, status_w: int) -> None:
        """Start bubblewrap, hold its namespaces once its command runs, let it end (closes status_w)."""
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_w,),
                env={"PATH": "/usr/bin:/bin"},
            )
        except OSError as exc:
            raise SandboxError(f"cannot start bubblewrap: {exc}") from exc
        finally:
            os.close(status_w)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            ready, _, _ = select.select([proc.stdout], [], [], _READY_SECONDS)
            if not ready or proc.stdout.readline() != b"ready\n":
                raise SandboxError(
                    "bubblewrap could not build the session's box: " + _stderr_of(proc)
                )
            self._hold(_status_record(status_r))
        finally:
            proc.stdin.close()  # the holder ends; the namespaces live on in our descriptors
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    def _hold(self, status: dict[str, object]) -> None:
        """Open the box's namespaces, checked against what bubblewrap reported of them."""
        pid = status.get("child-pid")
        if not isinstance(pid, int) or "mnt-namespace" not in status:
            raise SandboxError(f"bubblewrap reported no box process and mounts: {status}")
        for name in _SHARED:
            try:
                fd = os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError as exc:
                raise SandboxError(f"cannot hold the box's {name} namespace: {exc}") from exc
            self.fds[name] = fd
            reported = status.get(f"{name}-namespace")
            if reported is not None and os.fstat(fd).st_ino != reported:
                raise SandboxError(f"the box's {name} namespace changed while it was held")

    def close(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = {}


def _status_record(status_r: int) -> dict[str, object]:
    """bubblewrap's first JSON status record (written before its command started)."""
    os.set_blocking(status_r, False)
    try:
        text = os.read(status_r, 65536)
    except BlockingIOError:
        text = b""
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict):
                return record
    raise SandboxError("bubblewrap wrote no status for the session's box")


def _stderr_of(proc: subprocess.Popen[bytes]) -> str:
    proc.kill()
    assert proc.stderr is not None
    return proc.stderr.read().decode(errors="replace").strip() or "(no message)"


class BwrapSession(SandboxSession):
    """A `SandboxSession` of the bwrap backend (see the module's docstring).

    Its runs are forked by a launcher server (`launch_server`) started with
    the session, and started again should it ever fail. Runs are prepared
    ahead (`LaunchServer.prepare`): while a run runs, the next run's cgroup is
    made and the server's process for it joins it and enters the box; `warm`
    prepares more at once, while the CPUs have time to spare. A run with the
    same kind of limits starts in the oldest, with its own limits set.

    A run is over for its caller once its program has been reaped, while its
    pid 1 may still be tearing its namespaces down: its cgroup (counters
    read) is kept until that pid 1 is gone too, then removed (its pids and
    CPU directories kept for later runs, see `CgroupPool`) when the session
    is next warmed, once it holds more than MAX_RETIRED, or as it closes.
    Not as the next run starts: there it held up a judge's cases, whose
    runs, prepared while the program compiled, make no cgroup; the next
    `warm`, while the next program compiles, removes them.
    """

    def __init__(self, spec: SandboxSpec, slots: tuple[str, ...]) -> None:
        super().__init__(spec, slots)
        self._launcher = str(launcher_path())
        self._box = BoxTemplate(spec, self.slots)
        self._server: LaunchServer | None = None
        # The cgroups of the runs prepared ahead, oldest first, each known to the server by
        # its name; and the run in flight's, if it was one of them.
        self._prepared: collections.deque[RunCgroup] = collections.deque()
        self._claimed: RunCgroup | None = None
        # The cgroups of runs over, to remove once their pid 1 has been reaped; and why one
        # could not be (raised by `close`).
        self._retired: list[RunCgroup] = []
        self._removal_failure: OSError | None = None
        # Their pids and CPU directories, kept for the next runs (see `CgroupPool`).
        self._pool = CgroupPool()
        try:
            self._server = self._start_server()
        except BaseException:
            self._box.close()
            raise

    def _start_server(self) -> LaunchServer:
        fds = self._box.fds
        box = [word for name in _SHARED for word in (f"--{name}-fd", str(fds[name]))]
        return LaunchServer(self._launcher, box, tuple(fds[name] for name in _SHARED))

    def _server_now(self) -> LaunchServer:
        """The server, started again if it failed (with the cgroup it had prepared gone)."""
        if self._server is None or self._server.broken:
            if self._server is not None:
                self._server.close()
            self._server = None
            self._drop_prepared()
            self._server = self._start_server()
        return self._server

    def _release(self) -> None:
        if self._server is not None:
            self._server.close()  # its prepared run ends with it
        self._remove_retired()
        self._drop_prepared()
        self._box.close()
        spare = self._pool.held
        try:
            self._pool.clear()
        except OSError as exc:
            self._removal_failure = self._removal_failure or exc
        finally:
            _hold_dirs(spare, False)
        failure, self._removal_failure = self._removal_failure, None
        if failure is not None:
            raise SandboxError(str(failure)) from failure

    def _retire(self, group: RunCgroup) -> None:
        """Keep a finished run's cgroup until its pid 1 has been reaped (see the class)."""
        self._retired.append(group)
        _hold_spare(group, True)

    def _remove_retired(self, keep: int = 0) -> None:
        """Recycle or remove the finished runs' cgroups but the newest `keep`; one that
        cannot be is kept, and `close` says why."""
        if len(self._retired) <= keep:
            return
        cut = len(self._retired) - keep
        retired, self._retired = self._retired[:cut], self._retired[cut:]
        for group in retired:
            try:
                kept = self._pool.recycle(group)
            except OSError as exc:
                self._removal_failure = self._removal_failure or exc
                self._retired.append(group)
            else:
                _hold_dirs([d for d in group.dir_names if d not in kept], False)

    def _drop_prepared(self) -> None:
        """Remove the prepared runs' cgroups (which kills their processes)."""
        prepared, self._prepared = self._prepared, collections.deque()
        failure: OSError | None = None
        for group in prepared:
            _hold_spare(group, False)
            try:
                group.remove()
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            raise SandboxError(str(failure)) from failure

    def _group_for(self, limits: Limits) -> RunCgroup | None:
        """The oldest prepared cgroup if these limits need the same hierarchies (its limits set), else a new one."""
        memory, processes, cpus, account_cpu = cgroup_limits(limits)
        self._claimed = None
        if self._prepared and self._prepared[0].fits(processes, cpus, account_cpu):
            prepared = self._prepared.popleft()
            _hold_spare(prepared, False)
            try:
                prepared.apply_limits(memory, processes, cpus)
            except OSError as exc:
                self._prepared.appendleft(prepared)  # removed with the session
                _hold_spare(prepared, True)
                raise SandboxError(f"cannot set the run's cgroup limits: {exc}") from exc
            self._claimed = prepared
            return prepared
        self._drop_prepared()
        return run_cgroup(limits, self._pool)

    def _warm(self, limits: Limits, runs: int) -> None:
        if self._server is not None and not self._server.broken:
            try:
                self._server.settle()  # the last run's pid 1 reaped: its cgroup can go
            except SandboxError:
                return  # the next run starts another server (and prepares nothing now)
        self._remove_retired()  # their pids and CPU directories serve the runs prepared now
        _, processes, cpus, account_cpu = cgroup_limits(limits)
        if self._prepared and not self._prepared[0].fits(processes, cpus, account_cpu):
            self._drop_prepared()  # ready for other limits: the next run would drop them
        self._prepare(limits, min(runs, MAX_PREPARED))

    def _prepare(self, limits: Limits, runs: int) -> None:
        """Runs like one with `limits` prepared ahead, up to `runs`: each a cgroup, joined now.

        Only an optimisation: where it fails, a run makes its cgroup itself.
        """
        try:
            while len(self._prepared) < runs:
                group = run_cgroup(limits, self._pool)
                if group is None:
                    return
                self._prepared.append(group)
                _hold_spare(group, True)
                if self._server is not None and not self._server.broken:
                    self._server.prepare(group.name, group.procs_names, limits.memory_bytes)
        except SandboxError:
            with contextlib.suppress(SandboxError):
                self._drop_prepared()

    def _run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None,
        mounts: tuple[Mount, ...],
        pipes: Pipes | None,
        cancel: CancelToken | None,
    ) -> SandboxResult:
        starter = self._starter(argv, spec, mounts)
        return run_in_box(spec, stdin, cancel, pipes, starter, self._group_for, self._retire)

    def _starter(
        self, argv: Sequence[str], spec: SandboxSpec, mounts: tuple[Mount, ...]
    ) -> Starter:
        if not argv:
            raise SandboxError("nothing to run: the command is empty")
        for mount in mounts:
            if not os.path.exists(mount.source):
                raise SandboxError(f"sandbox mount source does not exist: {mount.source}")
        env = box_env(spec)

        def start(group: RunCgroup | None, status_w: int) -> Start:
            options = ["--chdir", spec.workdir, "--uid", str(spec.uid), "--gid", str(spec.gid)]
            if spec.limits.memory_bytes is not None:
                options += ["--tmpfs", str(spec.limits.memory_bytes)]
            for name in group.procs_names if group is not None else ():
                options += ["--cgroup", name]
            for limit in run_rlimits(spec.limits, group):
                options += ["--rlimit", str(limit.resource), str(limit.soft), str(limit.hard)]
            for mount in mounts:
                flag = "--bind" if mount.writable else "--ro-bind"
                options += [flag, os.fspath(mount.source), mount_target(mount.target)]
            for key, value in env.items():
                options += ["--setenv", f"{key}={value}"]
            options += ["--", *argv]
            prepared = group.name if group is not None and group is self._claimed else None
            spawn = self._spawner(options, prepared, spec.limits)
            return Start([], failure="the sandbox launcher could not start the run", spawn=spawn)

        return start

    def _spawner(self, options: list[str], prepared: str | None, limits: Limits) -> Spawn:
        def started(stdio: tuple[int, int, int], status: tuple[int, int]) -> Child:
            run = self._server_now().spawn(options, stdio, status, prepared)
            # The runs before are reaped (`spawn` took their reports): the oldest go past
            # the few a warmed session's runs leave for its next `warm`.
            self._remove_retired(keep=MAX_RETIRED)
            self._prepare(limits, 1)  # the next run, while this one runs
            return run

        return started
