"""`atoll tinker local` owns only the server it started, and stops all of it when it must.

`down` signals only a server atoll started, never a stranger behind a
reused pid: both processes in the first tests are real group leaders (as
the server is); one runs something unrelated, the other has the command
line `local up` gives the server (our serve script, the recorded port, this
state directory's checkpoints). Only the second is stopped. And `up`,
interrupted while the real server starts, stops that server's whole group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import running
from support.waiting import wait_for

from atoll.core import process_group
from atoll.pi_train import env as managed_env

pytestmark = pytest.mark.slow

SLEEP = "import time; time.sleep(120)"


@pytest.fixture
def leaders() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def _record(local: Path, pid: int, port: int) -> None:
    record = {"pid": pid, "port": port, "base_model": "/m", "log": str(local / "server.log")}
    (local / "server.json").write_text(json.dumps(record))


def _atoll(venv_bin: Path, local: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), "tinker", "local", *args],
        env={**os.environ, "ATOLL_TINKER_LOCAL_DIR": str(local)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_record_naming_an_unrelated_process_is_dropped_and_the_process_left_alone(
    venv_bin: Path, tmp_path: Path, leaders: list[subprocess.Popen[bytes]]
) -> None:
    stranger = subprocess.Popen([sys.executable, "-c", SLEEP], start_new_session=True)
    leaders.append(stranger)
    _record(tmp_path, stranger.pid, 8123)

    status = _atoll(venv_bin, tmp_path, "status")
    assert status.returncode == 1 and "no local Tinker server" in status.stdout
    _record(tmp_path, stranger.pid, 8123)
    down = _atoll(venv_bin, tmp_path, "down")
    assert down.returncode == 0, down.stderr
    assert "no local Tinker server" in down.stdout
    assert stranger.poll() is None  # not signalled
    assert not (tmp_path / "server.json").exists()


def test_a_process_running_our_server_command_is_stopped(
    venv_bin: Path, tmp_path: Path, leaders: list[subprocess.Popen[bytes]]
) -> None:
    script = str(managed_env.managed_script("serve"))
    ours = subprocess.Popen(
        [sys.executable, "-c", SLEEP, script, "--checkpoints-base", str(tmp_path / "checkpoints"),
         "--host", "127.0.0.1", "--port", "8124"],
        start_new_session=True,
    )  # fmt: skip
    leaders.append(ours)
    _record(tmp_path, ours.pid, 8124)

    down = _atoll(venv_bin, tmp_path, "down")
    assert down.returncode == 0, down.stderr
    assert "stopped http://127.0.0.1:8124" in down.stdout
    assert ours.wait(timeout=30) != 0  # ended by the signal
    assert not (tmp_path / "server.json").exists()


def test_a_server_on_another_port_is_not_the_recorded_one(
    venv_bin: Path, tmp_path: Path, leaders: list[subprocess.Popen[bytes]]
) -> None:
    script = str(managed_env.managed_script("serve"))
    other = subprocess.Popen(
        [sys.executable, "-c", SLEEP, script, "--checkpoints-base", str(tmp_path / "checkpoints"),
         "--port", "8125"],
        start_new_session=True,
    )  # fmt: skip
    leaders.append(other)
    _record(tmp_path, other.pid, 8126)

    down = _atoll(venv_bin, tmp_path, "down")
    assert down.returncode == 0 and "no local Tinker server" in down.stdout
    assert other.poll() is None


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_up_waits_for_the_server_stops_its_whole_group(
    signum: signal.Signals, venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """`local up` returns only a server that answers: interrupted while SkyRL tx starts, it leaves none."""
    command = subprocess.Popen(
        [str(venv_bin / "atoll"), "tinker", "local", "up", "--base-model", str(tiny_model)],
        env={**os.environ, "ATOLL_TINKER_LOCAL_DIR": str(tmp_path)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    record = tmp_path / "server.json"
    try:
        wait_for(lambda: record.exists() or command.poll() is not None, 300, "the server starts")
        assert record.exists(), command.stderr.read() if command.stderr else ""
        server = json.loads(record.read_text())["pid"]
        wait_for(lambda: len(process_group.members(server)) >= 1, 10, "the server runs")
        members = process_group.members(server)
        command.send_signal(signum)
        # SkyRL tx's own shutdown, or SIGKILL after 20 s; its stderr read meanwhile, so that
        # a full pipe cannot hold the command's last writes (and its exit).
        _, err = command.communicate(timeout=60)
        assert command.returncode != 0, err
        assert not process_group.group_alive(server)
        assert not [pid for pid in members if running(pid)]
        assert not record.exists()
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
