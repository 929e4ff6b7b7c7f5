"""One process per run directory: the second is refused with the holder named, from a record
that is never half-written and never names a holder that is gone."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from atoll.core import run_lock
from atoll.core.processes import start_time
from atoll.core.run_lock import RunDirInUse

HOLD = """
import sys, time
from pathlib import Path
from atoll.core import run_lock
path = Path(sys.argv[1])
if sys.argv[2] == "record":
    lock = run_lock.acquire(path, command="atoll test hold")
else:
    lock = run_lock.try_acquire(path)  # held, but no record
print("held", flush=True)
time.sleep(120)
"""

CHURN = """
import sys
from pathlib import Path
from atoll.core import run_lock
for _ in range(int(sys.argv[2])):
    with run_lock.acquire(Path(sys.argv[1]), command="atoll test churn"):
        pass
"""


def holding(path: Path, how: str = "record") -> subprocess.Popen[str]:
    """Another process that holds `path` until it is killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), how], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def killed(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_a_second_process_is_refused_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "run" / "run.lock"
    other = holding(path)
    try:
        with pytest.raises(RunDirInUse) as refused:
            run_lock.acquire(path, advice="wait for it or use another --out")
        message = str(refused.value)
        assert message.startswith(f"{tmp_path / 'run'} is in use by `atoll test hold` (pid ")
        assert f"(pid {other.pid} on {socket.gethostname()}, since " in message
        assert message.endswith("; wait for it or use another --out")
        assert "\n" not in message
        assert refused.value.holder is not None and refused.value.holder.pid == other.pid
        assert run_lock.try_acquire(path) is None
    finally:
        killed(other)
    # The kernel let go of the killed holder's lock: the directory is free again.
    with run_lock.acquire(path, command="atoll test next") as lock:
        assert json.loads(lock.record.read_text())["pid"] == os.getpid()  # type: ignore[union-attr]
    assert path.exists() and not run_lock.holder_file(path).exists()


def test_a_dead_holders_record_is_never_named(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    record = run_lock.holder_file(path)
    dead = holding(path)
    killed(dead)
    assert json.loads(record.read_text())["pid"] == dead.pid  # left behind by SIGKILL
    # Someone else holds the lock now and has not written its record yet.
    other = holding(path, "no-record")
    try:
        with pytest.raises(RunDirInUse) as refused:
            run_lock.acquire(path)
        assert f"in use by {run_lock.UNKNOWN_HOLDER}" in str(refused.value)
        assert str(dead.pid) not in str(refused.value) and refused.value.holder is None
        # A live pid is not the holder either when it is not the process the record named
        # (the pid was reused): the kernel's start time tells them apart.
        mine = start_time(os.getpid())
        assert mine is not None
        record.write_text(
            json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(), "command": "atoll old",
                 "since": "2000-01-01T00:00:00Z", "started": mine - 1}
            )
        )  # fmt: skip
        with pytest.raises(RunDirInUse, match="it has not said which yet"):
            run_lock.acquire(path)
    finally:
        killed(other)
    with run_lock.acquire(path, command="atoll test next"):
        assert run_lock.holder(path) == run_lock.Holder.read(record)
        assert json.loads(record.read_text())["command"] == "atoll test next"


def test_the_record_is_whole_or_absent_whenever_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    record = run_lock.holder_file(path)
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(path), "100"])
    seen = 0
    try:
        while churn.poll() is None:
            try:
                text = record.read_text()
            except FileNotFoundError:
                continue
            data = json.loads(text)  # a torn record would fail here
            assert set(data) == {"pid", "host", "command", "since", "started"}
            assert data["pid"] == churn.pid
            seen += 1
    finally:
        churn.kill()
        churn.wait()
    assert churn.returncode == 0 and seen > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.lock"]  # no temporary left


def test_the_lock_is_per_open_not_per_process(tmp_path: Path) -> None:
    """A second open in the same process is refused too: one archive, one writer."""
    path = tmp_path / "run.lock"
    first = run_lock.acquire(path, command="atoll test first")
    try:
        with pytest.raises(RunDirInUse, match=r"^the run is in use by `atoll test first` \(pid "):
            run_lock.acquire(path, what="the run")
    finally:
        first.release()
        first.release()  # again: nothing
    assert not first.held
    run_lock.acquire(path).release()


def test_the_default_command_is_the_command_line_without_options() -> None:
    argv = ["/venv/bin/atoll", "emit", "frontiersmith", "--out", "secret-path", "x"]
    assert run_lock.command_summary(argv) == "atoll emit frontiersmith"
    assert run_lock.command_summary(["/usr/bin/atoll", "a", "b", "c", "d"]) == "atoll a b c"


def test_wait_blocks_until_a_directory_is_free_and_leaves_no_file(tmp_path: Path) -> None:
    directory = tmp_path / "tasks"
    directory.mkdir()
    order: list[str] = []
    first = run_lock.wait(directory)
    second_in = threading.Event()

    def second() -> None:
        with run_lock.wait(directory):
            order.append("second")
            second_in.set()

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.3)
    assert not second_in.is_set()  # still waiting for the first
    order.append("first done")
    first.release()
    assert second_in.wait(10)
    thread.join()
    assert order == ["first done", "second"]
    assert list(directory.iterdir()) == []
