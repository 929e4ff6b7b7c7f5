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
elif sys.argv[2] == "wait":
    lock = run_lock.wait(path, command="atoll test wait")
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


class Busy(Exception):
    """A caller's own one-line error, as `wait(error=...)` raises it."""


def test_a_wait_with_a_timeout_gives_up_then_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "engine" / "engine.lock"
    other = holding(path, "wait")  # a waiter that got the lock keeps a record, as `acquire` does
    try:
        began = time.monotonic()
        with pytest.raises(RunDirInUse) as refused:
            run_lock.wait(path, timeout=0.6, what="the engine")
        waited = time.monotonic() - began
        assert 0.6 <= waited < 5
        message = str(refused.value)
        assert message.startswith("the engine is in use by `atoll test wait` (pid ")
        assert f"(pid {other.pid} on {socket.gethostname()}, since " in message
        assert message.endswith(f", still after 0.6 s of waiting; {run_lock.ADVICE}")
        assert "\n" not in message
        assert refused.value.holder is not None and refused.value.holder.pid == other.pid
        # The caller's own error carries the same line, caused by the refusal.
        with pytest.raises(Busy, match=r"^engine.lock's dir is in use by `atoll test wait`") as own:
            run_lock.wait(path, timeout=0, what="engine.lock's dir", advice="later", error=Busy)
        assert str(own.value).endswith(", still after 0 s of waiting; later")
        assert isinstance(own.value.__cause__, RunDirInUse)
    finally:
        killed(other)


def test_a_wait_with_a_timeout_takes_the_lock_once_its_holder_ends(tmp_path: Path) -> None:
    path = tmp_path / "stack.lock"
    other = holding(path, "wait")
    ended = threading.Timer(0.5, killed, [other])
    ended.start()
    try:
        began = time.monotonic()
        with run_lock.wait(path, timeout=30, command="atoll test next") as lock:
            waited = time.monotonic() - began
            record = json.loads(run_lock.holder_file(path).read_text())
            assert record["pid"] == os.getpid() and record["command"] == "atoll test next"
            assert run_lock.try_acquire(path) is None
        assert 0.4 <= waited < 5  # it waited for the holder, and no longer than its end
        assert not lock.held and not run_lock.holder_file(path).exists()
    finally:
        ended.join()
        if other.poll() is None:
            killed(other)
    # A directory waited on with a timeout is held too, and still leaves no file behind.
    directory = tmp_path / "tasks"
    directory.mkdir()
    with run_lock.wait(directory, timeout=1):
        assert run_lock.try_acquire(directory) is None
    assert list(directory.iterdir()) == []
