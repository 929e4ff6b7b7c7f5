"""Stopping recorded process groups: whole groups, stubborn ones, never a reused pid."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

from atoll.stack import processes


def _spawn(tmp_path: Path, name: str, script: str) -> processes.Recorded:
    return processes.spawn(name, ["bash", "-c", script], tmp_path / f"{name}.log", dict(os.environ))


def _members(pgid: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-g", str(pgid)], capture_output=True, text=True
    ).stdout
    return [int(line.split()[0]) for line in out.splitlines() if line.split()[1][0] != "Z"]


def test_stop_ends_the_whole_group_with_sigterm(tmp_path):
    record = _spawn(tmp_path, "tree", "sleep 60 & sleep 60 & wait")
    time.sleep(0.3)
    assert len(_members(record.pid)) == 3
    assert processes.stop([record], grace=10) == []
    assert _members(record.pid) == []
    assert not processes.alive(record)


@pytest.mark.slow
def test_a_group_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    record = _spawn(tmp_path, "stubborn", "trap '' TERM; while true; do sleep 0.1; done")
    time.sleep(0.3)
    started = time.monotonic()
    assert processes.stop([record], grace=1) == ["stubborn"]
    assert 1 <= time.monotonic() - started < 8
    assert not processes.alive(record)


def test_a_reused_pid_is_never_signalled(tmp_path):
    unrelated = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        actual = processes.start_time(unrelated.pid)
        assert actual is not None
        # The same pid, but started at another time: the process `up` recorded is gone.
        stale = processes.Recorded("old", unrelated.pid, actual - 1, ("sleep",), "")
        assert not processes.alive(stale)
        assert processes.stop([stale], grace=1) == []
        assert unrelated.poll() is None
        assert processes.alive(dataclasses.replace(stale, start_time=actual))
    finally:
        unrelated.kill()
        unrelated.wait()
