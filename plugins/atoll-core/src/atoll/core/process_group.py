"""Children in process groups of their own, and the guarantee that they stop with their owner.

A server atoll starts (the local Tinker server, `atoll tinker serve`'s
OpenAI server, a Reef stack, the private dockerd, a trainer) leads a session
of its own: one signal then reaches everything it starts, and a terminal's
Ctrl-C reaches only atoll, which stops it in order. The price is that the
child outlives atoll unless atoll stops it: Python's default SIGTERM ends a
process without running a `finally`, and a server that waits for its
requests in flight may sit out a SIGTERM for as long as a request runs. So
every child is started by `spawn`, stopped by `stop_groups` (SIGTERM, a
grace, SIGKILL to every member, reaped), and a command that must not leave
it behind holds it in an `Owner`, whose block ends in that stop however it
ends: normally, by an exception, by SIGINT, or by SIGTERM (which
`atoll.core.termination` turns into an unwinding). A second SIGTERM or
Ctrl-C during a stop cuts the grace short instead of interrupting the stop.

"Alive" means a member of the group runs: a leader may exit first and leave
workers behind, and a zombie (ended, not yet reaped) runs nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from atoll.core.processes import stat_fields
from atoll.core.termination import UnwindOnSigterm, signals_deferred

__all__ = [
    "KILL_WAIT_S",
    "STOP_GRACE_S",
    "GroupStillRunning",
    "Owner",
    "group_alive",
    "members",
    "signal_group",
    "spawn",
    "stop_group",
    "stop_groups",
    "stop_process",
]

#: How long a group may take to end after SIGTERM before SIGKILL: a server's own shutdown.
STOP_GRACE_S = 15.0
#: How long a SIGKILLed group may take to be gone (the kernel frees memory, parents reap).
KILL_WAIT_S = 5.0
_POLL_S = 0.05


class GroupStillRunning(Exception):
    """Members of a process group outlived SIGKILL (stuck in the kernel); the message names them."""


def spawn(argv: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(argv, **popen)` leading a new session: its pid is its process-group id."""
    popen.pop("start_new_session", None)
    return subprocess.Popen(list(argv), start_new_session=True, **popen)


def members(pgid: int) -> list[int]:
    """The pids of the running (not zombie) processes in process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name))  # None: it ended while read
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` still runs."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # members of another user: /proc still tells
    return bool(members(pgid))


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to every member of group `pgid`; whether any member was there to get it."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait_gone(
    pgids: Iterable[int], seconds: float, reap: Callable[[], object], hurry: Callable[[], bool]
) -> list[int]:
    """Wait up to `seconds` (less once `hurry()`) for the groups to empty; those still running."""
    pending = list(pgids)
    deadline = time.monotonic() + seconds
    while pending:
        reap()
        pending = [pgid for pgid in pending if group_alive(pgid)]
        if not pending or time.monotonic() >= deadline or hurry():
            break
        time.sleep(_POLL_S)
    return pending


def stop_groups(
    pgids: Sequence[int],
    grace: float = STOP_GRACE_S,
    *,
    reap: Callable[[], object] = lambda: None,
) -> list[int]:
    """SIGTERM each group (last first), SIGKILL what outlives `grace`; the pgids that needed SIGKILL.

    Returns once every member of every group has ended; `GroupStillRunning`
    if some outlive SIGKILL too. `reap` collects the leaders this process
    started (`Popen.poll`) so none lingers as a zombie. SIGTERM and SIGINT
    that arrive meanwhile end the grace at once and are delivered after.
    """
    with signals_deferred() as asked:
        started = [pgid for pgid in reversed(pgids) if group_alive(pgid)]
        for pgid in started:
            signal_group(pgid, signal.SIGTERM)
        stubborn = _wait_gone(started, grace, reap, asked)
        for pgid in stubborn:
            signal_group(pgid, signal.SIGKILL)
        left = _wait_gone(stubborn, KILL_WAIT_S, reap, lambda: False)
        reap()
    if left:
        named = ", ".join(f"group {pgid}: {members(pgid)}" for pgid in left)
        raise GroupStillRunning(
            f"processes outlived SIGKILL ({named}); they are stuck in the kernel"
        )
    return stubborn


def stop_group(
    pgid: int, grace: float = STOP_GRACE_S, *, reap: Callable[[], object] = lambda: None
) -> bool:
    """`stop_groups` for one group; whether SIGTERM sufficed."""
    return not stop_groups([pgid], grace, reap=reap)


class Owner:
    """The process groups a block started, stopped when the block ends, however it ends.

    `with Owner() as owner: server = owner.spawn(argv, ...)`. Within the
    block SIGTERM unwinds (as `KeyboardInterrupt` with `interrupt`, for code
    written for Ctrl-C; a host's own SIGTERM handler is kept). A child that
    is meant to outlive the block once it is ready (a detached server) is
    handed over with `release`.
    """

    def __init__(self, grace: float = STOP_GRACE_S, *, interrupt: bool = False) -> None:
        self.grace = grace
        self._unwind = UnwindOnSigterm(interrupt)
        self._owned: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Owner:
        self._unwind.install()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        except GroupStillRunning:
            if kind is None:
                raise
        finally:
            self._unwind.restore()

    def spawn(self, argv: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
        """Start `argv` in a group of its own (`spawn`), owned from that moment on.

        A SIGTERM or Ctrl-C while the child starts is held until it is owned,
        then delivered: the block's end stops it like any other child.
        """
        with signals_deferred():
            process = spawn(argv, **popen)
            self._owned.append(process)
        return process

    def release(self, process: subprocess.Popen[bytes] | None = None) -> None:
        """`process` (without one: every owned child) outlives the block: no stop at its end."""
        self._owned = [p for p in self._owned if process is not None and p is not process]

    def stop(self) -> list[int]:
        """Stop every owned group now (`stop_groups`); the pgids that needed SIGKILL."""
        owned, self._owned = self._owned, []

        def reap() -> None:
            for process in owned:
                process.poll()

        return stop_groups([p.pid for p in owned], self.grace, reap=reap)


def stop_process(process: subprocess.Popen[bytes], grace: float = STOP_GRACE_S) -> bool:
    """Stop the group `process` leads and reap it; whether SIGTERM sufficed."""
    sufficed = stop_group(process.pid, grace, reap=process.poll)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_WAIT_S)
    return sufficed
