"""Detached process groups that can be stopped later, by a different process.

`atoll stack up` returns while Reef keeps running, and `atoll stack down` (or
the job plugin at job end) must stop exactly what was started, never a process
that merely reuses a recorded pid. So each started process leads its own
session (its pid is its process-group id) and is recorded with its start time
from /proc; a stop signals the whole group only while that identity still
holds. Starting and stopping groups is `atoll.core.process_group`'s; what is
here is the record and the identity check.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core import process_group
from atoll.core.process_group import group_alive, stop_groups
from atoll.core.processes import start_time


@dataclass(frozen=True)
class Recorded:
    """A started process: its name, pid (= process group), start time and log."""

    name: str
    pid: int
    start_time: int
    argv: tuple[str, ...]
    log: str

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "pid": self.pid,
            "start_time": self.start_time,
            "argv": list(self.argv),
            "log": self.log,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recorded:
        """The record `to_json` wrote (a state file is JSON: its values are typed by their key)."""
        return cls(
            name=str(data["name"]),
            pid=int(data["pid"]),
            start_time=int(data["start_time"]),
            argv=tuple(str(a) for a in data.get("argv", ()) or ()),
            log=str(data.get("log", "")),
        )


# The file-creation mask of a process that writes secrets: whatever it creates is its
# owner's alone from the moment it exists, whatever mode the process itself asks for.
PRIVATE_UMASK = 0o077


def spawn(
    name: str,
    argv: Sequence[str],
    log: Path,
    env: Mapping[str, str],
    cwd: Path | None = None,
    *,
    private: bool = False,
) -> Recorded:
    """Start `argv` in a new session with output appended to `log`; record its identity.

    `private`: the process (and its children) create every file owner-only
    (`PRIVATE_UMASK`), and so is the log; for a process that writes a token.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600 if private else 0o644)
    with os.fdopen(fd, "ab") as out:
        proc = process_group.spawn(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            umask=PRIVATE_UMASK if private else -1,
        )
    started = start_time(proc.pid)
    # The Popen object is dropped on purpose: the child outlives this process.
    # Reaping it (when this process does live on, as in the job plugin) is done by `alive`.
    _CHILDREN[proc.pid] = proc
    return Recorded(name, proc.pid, started or 0, tuple(argv), str(log))


__all__ = [
    "PRIVATE_UMASK",
    "Recorded",
    "alive",
    "leader_alive",
    "spawn",
    "start_time",
    "stop",
]


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def alive(record: Recorded) -> bool:
    """Whether the recorded process, or any member of its group, still runs.

    A record whose leader has gone and whose group is empty is dead, and a pid
    reused by an unrelated process does not count: Linux does not hand out a
    pid while a process group of that id still has members.
    """
    if leader_alive(record):
        return True
    return start_time(record.pid) is None and group_alive(record.pid)


def leader_alive(record: Recorded) -> bool:
    child = _CHILDREN.get(record.pid)
    if child is not None:
        child.poll()
    return start_time(record.pid) == record.start_time


def _reap() -> None:
    for child in _CHILDREN.values():
        child.poll()


def stop(records: Sequence[Recorded], grace: float = 30.0) -> list[str]:
    """SIGTERM each recorded group (last started first), then SIGKILL what outlives `grace`.

    Only groups that `alive` still attributes to the record are signalled, so a
    pid reused by an unrelated process never is. Returns the names of
    the processes that had to be killed.
    """
    targets = [r for r in records if alive(r)]
    killed = stop_groups([r.pid for r in targets], grace, reap=_reap)
    return [r.name for r in reversed(targets) if r.pid in killed]
