"""`kill -9` of a process at any moment of its sandboxes' lives leaves nothing running.

The process runs short sandboxes back to back from four threads, so a kill
lands in every phase of a run (the set-up shell, bubblewrap's two stages,
the program) over a few tries; each try, every sandboxed process and every
per-run cgroup of the killed process must be gone within seconds.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import processes_of_uid, sandbox_cgroups_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RUNNER = Path(__file__).with_name("sandbox_runner.py")
TRIES = 12


def settled(pid: int, uid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while processes_of_uid(uid, zombies=True) or sandbox_cgroups_of(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_killed_parent_leaves_no_sandboxed_process_and_no_cgroup(test_uid: int) -> None:
    pick = random.Random(12)
    leaks = []
    for attempt in range(TRIES):
        runner = subprocess.Popen(
            [sys.executable, str(RUNNER), str(test_uid)], stdout=subprocess.PIPE
        )
        assert runner.stdout is not None and runner.stdout.readline() == b"running\n"
        time.sleep(pick.uniform(0.2, 0.6))
        runner.kill()
        runner.wait(timeout=30)
        if not settled(runner.pid, test_uid):
            leaks.append(
                (attempt, processes_of_uid(test_uid, zombies=True), sandbox_cgroups_of(runner.pid))
            )
            break
    assert leaks == []
