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

from atoll.core.sandbox.cgroupfs import PARENT, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RUNNER = Path(__file__).with_name("sandbox_runner.py")
TRIES = 12


def processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                found.append(int(entry.name))
    return found


def groups_of(pid: int) -> list[Path]:
    return [g for g in ROOT.glob(f"*/{PARENT}/{pid}[.-]*") if g.is_dir()]


def settled(pid: int, uid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while processes_of(uid) or groups_of(pid):
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
            leaks.append((attempt, processes_of(test_uid), groups_of(runner.pid)))
            break
    assert leaks == []
