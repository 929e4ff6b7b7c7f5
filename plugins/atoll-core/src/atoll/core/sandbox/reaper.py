"""A watcher that empties a process's sandbox cgroups when that process dies, even by SIGKILL.

bubblewrap's `--die-with-parent` has a window: a parent killed while a
sandbox is being set up leaves bubblewrap's inner process, and the program
under it, with no parent to die with, no supervisor and no wall clock. Every
one of them is still in the run's cgroup, though. So the first sandboxed run
of a process starts this watcher, in a session of its own (a kill of the
process group does not take it along): it waits on a pidfd for the process
to end, then kills whatever is left in that process's per-run groups and
removes the groups (see `cgroups.reclaim`), and exits.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading

from atoll.core import process_group
from atoll.core.sandbox import cgroups, owners

_started: dict[int, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()


def ensure_started() -> None:
    """Start this process's watcher, once (a forked child gets its own)."""
    pid = os.getpid()
    with _lock:
        if pid in _started:
            return
        _started[pid] = process_group.spawn(
            [sys.executable, "-m", "atoll.core.sandbox.reaper", str(pid), owners.own_tag()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_plain_env(),
        )


def _plain_env() -> dict[str, str]:
    """Only what finds Python and atoll: the watcher carries none of the caller's secrets."""
    keep = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LANG")
    return {name: os.environ[name] for name in keep if name in os.environ}


def watch(pid: int, tag: str) -> None:
    """Wait until process `pid` (owner `tag`) has ended, then reclaim its groups."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        pidfd = None
    if pidfd is not None:
        if owners.alive(tag):  # the pidfd is the owner's, not a later process's
            select.select([pidfd], [], [])
        os.close(pidfd)
    cgroups.reclaim(tag)


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2])
