"""`kill -9` of a process at any moment of its sandboxes' lives leaves nothing running.

The process runs short sandboxes back to back from four threads, so a kill
lands in every phase of a run (the set-up shell, bubblewrap's two stages,
the program; or a session's launcher server, the run's pid 1 it forked and
the program) over a few tries; each try, every sandboxed process, every
per-run cgroup and every launcher server of the killed process must be gone
within seconds.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import pids_mentioning, processes_of_uid, sandbox_cgroups_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RUNNER = Path(__file__).with_name("sandbox_runner.py")
TRIES = 12


def launchers_of(pid: int) -> list[int]:
    """Session launcher servers (and the launchers they forked) that `pid` started."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--serve" in words and words[words.index(b"--parent") + 1] == str(pid).encode():
            found.append(int(entry.name))
    return found


def reapers_of(pid: int) -> list[int]:
    """The cgroup reaper (atoll.core.sandbox.reaper) watching `pid`, if it still runs."""
    return pids_mentioning(f"atoll.core.sandbox.reaper {pid} ")  # its argv: PID, then TAG


def group_members(groups: list[Path]) -> dict[str, str]:
    """What each leftover group still holds (its cgroup.procs), or why it cannot be read."""
    found = {}
    for group in groups:
        try:
            found[str(group)] = (group / "cgroup.procs").read_text().strip()
        except OSError as exc:
            found[str(group)] = f"unreadable: {exc}"
    return found


def settled(pid: int, uid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while processes_of_uid(uid, zombies=True) or sandbox_cgroups_of(pid) or launchers_of(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("way", ["fresh", "session"])
def test_a_killed_parent_leaves_no_sandboxed_process_and_no_cgroup(test_uid: int, way: str) -> None:
    pick = random.Random(12)
    leaks = []
    for attempt in range(TRIES):
        runner = subprocess.Popen(
            [sys.executable, str(RUNNER), str(test_uid), way], stdout=subprocess.PIPE
        )
        assert runner.stdout is not None and runner.stdout.readline() == b"running\n"
        time.sleep(pick.uniform(0.2, 0.6))
        runner.kill()
        runner.wait(timeout=30)
        if not settled(runner.pid, test_uid):
            # What a leak is made of, for telling a slow reclaim from a real leak: the
            # leftover groups' members, and whether the runner's reaper still runs.
            groups = sandbox_cgroups_of(runner.pid)
            leaks.append(
                (
                    attempt,
                    processes_of_uid(test_uid, zombies=True),
                    group_members(groups),
                    launchers_of(runner.pid),
                    {"reapers": reapers_of(runner.pid)},
                )
            )
            break
    assert leaks == []
