"""The judge's unix socket: what `atoll judge serve` and the relay put behind it.

A trial without a network reaches the judge only through this socket, so a
stale socket must be replaced, a live one never taken over, and the directory
`atoll judge serve` made must be gone after it stops.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from support.judge import small_judge
from support.ports import free_port

from atoll.judge import judge_socket
from atoll.judge.relay import RelayError, UnixToTcpRelay

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def short_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="atoll-judge-t-"))
    yield directory
    for leftover in directory.iterdir():
        leftover.unlink()
    directory.rmdir()


def unix_get(path: Path, route: str) -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(path)), timeout=30) as client:
        return client.get(f"http://judge{route}")


def test_a_stale_socket_is_replaced_by_one_any_local_user_can_connect_to(short_dir: Path) -> None:
    path = short_dir / "judge.sock"
    with socket.socket(socket.AF_UNIX) as stale:  # what a SIGKILLed judge leaves
        stale.bind(str(path))
    with socket.socket(socket.AF_UNIX) as client, pytest.raises(ConnectionRefusedError):
        client.connect(str(path))
    live = judge_socket.bind(short_dir)
    try:
        assert path.stat().st_mode & 0o777 == 0o666  # the trial's verifier is another uid
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(path))
    finally:
        live.close()


def test_something_else_at_the_path_is_an_error_not_deleted(short_dir: Path) -> None:
    (short_dir / "judge.sock").write_text("precious")
    with pytest.raises(judge_socket.SocketDirError, match="exists and is not a socket"):
        judge_socket.bind(short_dir)
    assert (short_dir / "judge.sock").read_text() == "precious"


def test_a_path_too_long_for_a_socket_says_which_variable_to_change(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    with pytest.raises(judge_socket.SocketDirError, match="FRONTIERCS_JUDGE_SOCKET_DIR"):
        judge_socket.bind(deep)


def test_the_relay_carries_the_judges_protocol_and_a_second_judge_is_refused(
    tmp_path: Path, short_dir: Path
) -> None:
    with small_judge(tmp_path / "judge") as url:
        relay = UnixToTcpRelay(judge_socket.bind(short_dir), url)
        relay.start()
        try:
            path = short_dir / "judge.sock"
            assert unix_get(path, "/health").json() == {"ok": True, "workers": 2}
            problems = unix_get(path, "/problems").json()["problems"]
            assert [p["id"] for p in problems] == ["0"]
            assert judge_socket.answers(path)
            with pytest.raises(judge_socket.SocketDirError, match="a judge already serves"):
                judge_socket.bind(short_dir)
        finally:
            relay.close()


def test_a_relay_to_a_judge_that_is_gone_closes_the_connection(short_dir: Path) -> None:
    port = free_port()
    relay = UnixToTcpRelay(judge_socket.bind(short_dir), f"http://127.0.0.1:{port}")
    relay.start()
    try:
        assert not judge_socket.answers(short_dir / "judge.sock", timeout_s=5)
    finally:
        relay.close()


def test_the_relay_refuses_an_address_it_cannot_use(short_dir: Path) -> None:
    listener = judge_socket.bind(short_dir)
    try:
        with pytest.raises(RelayError, match="expected http://HOST:PORT"):
            UnixToTcpRelay(listener, "judge.example:8081")
    finally:
        listener.close()


@pytest.mark.slow
def test_serve_prints_the_socket_directory_and_removes_it_on_sigterm(
    venv_bin: Path, tmp_path: Path
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [str(venv_bin / "atoll"), "judge", "serve", "--port", str(port),
         "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp", "COLUMNS": "200"},
    )  # fmt: skip
    try:
        exported = None
        deadline = time.monotonic() + 60
        while exported is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            exported = re.match(r"export FRONTIERCS_JUDGE_SOCKET_DIR=(\S+)", line)
        assert exported is not None, "no export line"
        directory = Path(exported.group(1))
        path = directory / "judge.sock"
        deadline = time.monotonic() + 30
        while not judge_socket.answers(path, timeout_s=1) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert unix_get(path, "/health").json()["ok"] is True
        assert httpx.get(f"http://127.0.0.1:{port}/health").json()["ok"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert not directory.exists()
