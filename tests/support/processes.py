"""What runs on this machine, read from /proc: for tests that check nothing was left behind.

Every scan goes through `pids_where`, so each test says only what it looks
for (a command line, a working directory, a marker in the environment, a
parent, a uid) and all of them skip vanished processes and this one alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from atoll.core.sandbox.cgroupfs import PARENT, ROOT, unified
from atoll.core.sandbox.conformance.audit import processes_of_uid

__all__ = [
    "children_of",
    "pids_mentioning",
    "pids_where",
    "processes_in",
    "processes_mentioning",
    "processes_of_uid",
    "processes_with_environment",
    "running",
    "sandbox_cgroups_of",
]


def _read(pid: int, name: str) -> bytes:
    return Path(f"/proc/{pid}/{name}").read_bytes()


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (which may hold spaces): state, ppid..."""
    stat = _read(pid, "stat").decode()
    return stat[stat.rindex(")") + 2 :].split()


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended)."""
    try:
        return _stat_fields(pid)[0] != "Z"
    except OSError:
        return False


def pids_where(match: Callable[[int], bool], *, zombies: bool = True) -> list[int]:
    """Pids of this machine's other processes for which `match(pid)` holds.

    A process that ends while `match` reads it (OSError) does not match.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        try:
            if (zombies or running(pid)) and match(pid):
                found.append(pid)
        except OSError:
            continue
    return found


def _cmdline(pid: int) -> str:
    return _read(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace")


def pids_mentioning(text: str) -> list[int]:
    """Pids of this machine's other processes whose command line contains `text`."""
    return pids_where(lambda pid: text in _cmdline(pid))


def processes_mentioning(text: str) -> list[str]:
    """Command lines of this machine's other processes that contain `text`."""
    found = []
    for pid in pids_mentioning(text):
        try:
            found.append(_cmdline(pid))
        except OSError:
            continue
    return found


def processes_in(directory: Path) -> list[int]:
    """Pids whose working directory is `directory` or below it."""
    return pids_where(lambda pid: os.readlink(f"/proc/{pid}/cwd").startswith(str(directory)))


def processes_with_environment(entry: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds `entry` (`NAME=value`)."""
    needle = entry.encode()
    return pids_where(lambda pid: needle in _read(pid, "environ").split(b"\0"), zombies=False)


def children_of(parent: int) -> list[int]:
    """Pids whose parent is `parent`."""
    return pids_where(lambda pid: int(_stat_fields(pid)[1]) == parent)


def sandbox_cgroups_of(pid: int) -> list[Path]:
    """The sandbox cgroups a process made (named `<pid>-...` or `<pid>.<start time>-...`)."""
    if unified():
        return sorted(g for g in (ROOT / PARENT).glob(f"{pid}[.-]*") if g.is_dir())
    return sorted(
        group
        for group in ROOT.glob(f"*/{PARENT}/{pid}[.-]*")
        if group.is_dir() and not group.parent.parent.is_symlink()
    )


def files_of_uid(uid: int, directories: Iterable[str | Path]) -> list[str]:
    """The entries directly in `directories` that `uid` owns: what a run left behind."""
    found = []
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        found += [e.path for e in entries if _owner(e) == uid]
    return found


def _owner(entry: os.DirEntry[str]) -> int | None:
    """The entry's owner, or None when it went between the listing and the stat.

    Other test workers create and remove their own files in the same /tmp all the time.
    """
    try:
        return entry.stat(follow_symlinks=False).st_uid
    except FileNotFoundError:
        return None
