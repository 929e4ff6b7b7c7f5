"""What /proc says about a process: whether it lives, its command line, and when it started.

Ownership checks are built from these: a pid written in a record file is
only ours while the live process behind it runs what we started (after a
reboot the number may name a stranger's process), so callers compare the
command line before they signal anything. A pid and its start time together
name one process for good: a record of both is stale once they no longer match.
"""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether `pid` names a live process; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def cmdline(pid: int) -> list[str]:
    """The argv of process `pid`, or [] when it is gone or unreadable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat from the state on (state, ppid, pgrp, ...); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses; the rest follows the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields or None


def start_time(pid: int) -> int | None:
    """The kernel's start time of `pid` (clock ticks since boot); None if gone or a zombie."""
    fields = stat_fields(pid)
    if fields is None or fields[0] == "Z":
        return None
    return int(fields[19])
