"""Stopping `atoll tinker serve`'s server waits for its whole process group, not its leader.

A server's workers may take a moment to end after SIGTERM; `serve.stop` (the
same helper `atoll tinker local down` uses) returns only once none is left.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from atoll.pi_train.serving import serve

# The leader exits at once on SIGTERM; a member of its group takes a second to finish.
GROUP = '(trap "sleep 1; exit 0" TERM; while :; do sleep 0.1; done) & exec sleep 60'


def _group_gone(pgid: int) -> bool:
    """No running (non-zombie) process is left in the group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return False
    return True


@pytest.mark.slow
def test_stop_returns_once_the_whole_group_is_gone() -> None:
    process = subprocess.Popen(["bash", "-c", GROUP], start_new_session=True)
    time.sleep(0.5)  # the member has set its trap
    started = time.monotonic()
    serve.stop(process)
    assert _group_gone(process.pid) and process.returncode is not None
    assert time.monotonic() - started < 10  # SIGTERM sufficed: no wait for the SIGKILL


def test_stopping_a_server_that_already_exited_returns_at_once() -> None:
    process = subprocess.Popen(["bash", "-c", "exit 0"], start_new_session=True)
    process.wait()
    started = time.monotonic()
    serve.stop(process)
    assert time.monotonic() - started < 1
