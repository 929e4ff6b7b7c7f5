"""`atoll judge serve` as a process: a bounded queue, and SIGKILL loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.ports import free_port

pytestmark = pytest.mark.timeout(300)


class Server:
    def __init__(self, venv_bin: Path, problems: Path, state: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            str(venv_bin / "atoll"), "judge", "serve", "--port", str(self.port),
            "--problems", str(problems), "--state-dir", str(state),
            "--workers", "2", "--max-queue", "2",
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise AssertionError(f"judge exited: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
            time.sleep(0.1)
        raise AssertionError("judge did not answer /health within 60 s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture()
def server(venv_bin: Path, small_problems: Path, tmp_path: Path) -> Iterator[Server]:
    judge = Server(venv_bin, small_problems, tmp_path / "state")
    yield judge
    judge.kill()


def submit(url: str, code: bytes) -> httpx.Response:
    return httpx.post(
        f"{url}/submit",
        data={"pid": "0", "lang": "cpp"},
        files={"code": ("solution.cpp", code)},
        timeout=30,
    )


def final(url: str, sid: int, deadline_s: float = 120) -> dict:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        body = httpx.get(f"{url}/result/{sid}", timeout=30).json()
        if body.get("status") != "queued":
            return body
        time.sleep(0.1)
    raise AssertionError(f"no final result for {sid}")


@pytest.mark.slow
def test_full_queue_answers_503_and_sigkill_loses_no_result(
    server: Server, sources: dict[str, bytes]
) -> None:
    server.start()
    done_sid = submit(server.url, sources["row"]).json()["sid"]
    done = final(server.url, done_sid)
    assert done["status"] == "done" and done["score"] > 0

    slow_sid = submit(server.url, sources["sleeper"]).json()["sid"]  # holds both workers 4 s
    queued_sid = submit(server.url, sources["shelf"]).json()["sid"]
    refused = submit(server.url, sources["turn"])
    assert refused.status_code == 503
    assert "queue is full" in refused.json()["error"]
    assert httpx.get(f"{server.url}/result/{queued_sid}").json() == {"status": "queued"}

    server.kill()
    server.start()

    for _ in range(2):  # a finished result survives the kill and stays readable
        assert httpx.get(f"{server.url}/result/{done_sid}").json() == done
    slow = final(server.url, slow_sid)  # unfinished work is judged again, not lost
    assert slow["status"] == "done" and slow["score"] == 0.0
    assert {c["status"] for c in slow["cases"]} == {"wall_time_limit"}
    shelf = final(server.url, queued_sid)
    assert shelf["status"] == "done" and shelf["score"] > done["score"]
