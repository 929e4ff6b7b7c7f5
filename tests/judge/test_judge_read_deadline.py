"""Slow clients against the real judge server: a request must arrive whole within the bound.

Each client here is a raw socket that stops or trickles mid-request, as a
stuck or hostile client does; the server must drop it after the read
deadline (1 s here) and keep serving everyone else.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from atoll.judge.embedded import EmbeddedJudge, JudgeSetup

pytestmark = pytest.mark.timeout(120)

DEADLINE_S = 1.0
PATIENCE_S = 10.0  # far past the deadline: a server without one never answers in time


@pytest.fixture(scope="module")
def judge(state_dir: Path, small_problems: Path) -> Iterator[EmbeddedJudge]:
    setup = JudgeSetup(problems_dir=small_problems, state_dir=state_dir, read_timeout_s=DEADLINE_S)
    with EmbeddedJudge(setup) as embedded:
        yield embedded


def connect(judge: EmbeddedJudge) -> socket.socket:
    parts = urlsplit(judge.url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.settimeout(PATIENCE_S)
    return sock


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    started = time.monotonic()
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def assert_serving(judge: EmbeddedJudge) -> None:
    assert httpx.get(f"{judge.url}/health", timeout=5).json()["ok"] is True


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /submit HTTP/1.1\r\nHost: judge\r\nContent-Type: appl"],
    ids=["nothing", "half-the-headers"],
)
@pytest.mark.slow
def test_a_request_that_never_arrives_is_answered_408_and_closed(
    judge: EmbeddedJudge, sent: bytes
) -> None:
    with connect(judge) as sock:
        sock.sendall(sent)
        received, waited = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert b"did not arrive whole within 1 s" in received
    assert DEADLINE_S * 0.8 <= waited < DEADLINE_S + 3
    assert_serving(judge)


@pytest.mark.slow
def test_a_half_sent_body_is_dropped(judge: EmbeddedJudge) -> None:
    head = (
        b"POST /submit HTTP/1.1\r\nHost: judge\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n"
    )
    with connect(judge) as sock:
        sock.sendall(head + b'{"pid": "0"')
        _, waited = read_until_closed(sock)
    assert waited < DEADLINE_S + 3
    assert_serving(judge)


@pytest.mark.slow
def test_a_trickle_does_not_reset_the_deadline(judge: EmbeddedJudge) -> None:
    request = b"POST /submit HTTP/1.1\r\nHost: judge\r\n" + b"X-Pad: " + b"a" * 200
    started = time.monotonic()
    closed = False
    with connect(judge) as sock:
        for byte in request:
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the server closed the connection
                closed = True
                break
            time.sleep(0.05)
            sock.setblocking(False)
            try:
                if sock.recv(65536) == b"":
                    closed = True
                    break
            except BlockingIOError:
                pass
            except OSError:
                closed = True
                break
            finally:
                sock.setblocking(True)
                sock.settimeout(PATIENCE_S)
    assert closed, "the server kept a connection that trickled a byte every 50 ms"
    assert time.monotonic() - started < DEADLINE_S + 3
    assert_serving(judge)


@pytest.mark.slow
def test_an_idle_kept_alive_connection_outlives_the_read_deadline(judge: EmbeddedJudge) -> None:
    with httpx.Client(base_url=judge.url, timeout=5) as client:
        assert client.get("/health").status_code == 200
        time.sleep(DEADLINE_S * 2)  # idle between requests: the keep-alive bound (5 s) applies
        assert client.get("/problems").status_code == 200
        assert client.get("/health").status_code == 200


@pytest.mark.slow
def test_slow_clients_do_not_hold_up_others(judge: EmbeddedJudge) -> None:
    stuck = [connect(judge) for _ in range(20)]
    try:
        for sock in stuck:
            sock.sendall(b"GET /health HTTP/1.1\r\n")
        assert_serving(judge)
        for sock in stuck:
            received, _ = read_until_closed(sock)
            assert received.startswith(b"HTTP/1.1 408 ")
    finally:
        for sock in stuck:
            sock.close()
