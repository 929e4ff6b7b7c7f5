"""Which process made a sandbox's leftovers, and whether it is provably gone.

A per-run cgroup is named after the process that made it: its pid and the
kernel's start time of that pid. A pid alone is reused (pid_max is often
32768), so a group is stale only when no process with that pid *and* that
start time runs any more; then nothing alive can still be using it, and it
may be removed by whoever finds it. A live owner's groups are never touched.
"""

from __future__ import annotations

import os
from functools import cache

from atoll.core.processes import start_time


@cache
def _own(pid: int) -> str:
    return f"{pid}.{start_time(pid)}"


def own_tag() -> str:
    """This process's owner tag, `<pid>.<start time>`."""
    return _own(os.getpid())


def parse(tag: str) -> tuple[int, int] | None:
    """(pid, start time) of an owner tag, or None if `tag` is not one."""
    pid, dot, started = tag.partition(".")
    if not dot or not pid.isdigit() or not started.isdigit():
        return None
    return int(pid), int(started)


def alive(tag: str) -> bool:
    """Whether the process `tag` names still runs (an unparsable tag counts as alive)."""
    parsed = parse(tag)
    if parsed is None:
        return True
    pid, started = parsed
    return start_time(pid) == started
