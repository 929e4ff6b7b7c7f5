"""`atoll sandbox fusion-serve`: SandboxFusion's run_code API, answered by atoll's sandbox.

The server is driven with SandboxFusion's own client (`sandbox_fusion.run_code`),
as a trainer written against SandboxFusion would drive it.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import flawed_backends
import httpx
import pytest
from sandbox_fusion import RunCodeRequest, RunCodeResponse, run_code
from support.ports import free_port

from atoll.core.sandbox.fusion import (
    EmbeddedFusionServer,
    FusionServer,
    NotLoopbackError,
    is_loopback_host,
    require_loopback_url,
)

pytestmark = pytest.mark.timeout(180)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _run(url: str, **fields: object) -> RunCodeResponse:
    return run_code(RunCodeRequest(**fields), endpoint=url, max_attempts=1, client_timeout=60)


@pytest.fixture(scope="module")
def served(venv_bin: Path) -> Iterator[str]:
    """`atoll sandbox fusion-serve` as a process, on a free port; its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [str(venv_bin / "atoll"), "sandbox", "fusion-serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in first, first + proc.stderr.read()  # type: ignore[union-attr]
        assert (
            proc.stdout.readline().strip()
            == f"export SANDBOX_FUSION_ENDPOINT=http://127.0.0.1:{port}"
        )
        yield f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    with EmbeddedFusionServer(workers=2) as server:
        yield server.url


# --- the real client against the served process -----------------------------------------------


@pytest.mark.slow
def test_python_runs_with_stdin_files_and_fetched_files(served: str) -> None:
    code = (
        "import os, sys\n"
        "data = open('data/in.txt').read()\n"
        "print(data.upper(), sys.stdin.read(), os.getcwd())\n"
        "os.makedirs('out', exist_ok=True)\n"
        "open('out/result.txt', 'w').write(data[::-1])\n"
    )
    response = _run(
        served,
        code=code,
        language="python",
        stdin="from stdin",
        files={"data/in.txt": _b64(b"hello")},
        fetch_files=["out/result.txt", "data/in.txt", "never-written.txt"],
    )
    assert response.status == "Success"
    assert response.run_result is not None
    assert response.run_result.status == "Finished" and response.run_result.return_code == 0
    assert response.run_result.stdout == "HELLO from stdin /workspace\n"
    assert response.files == {"out/result.txt": _b64(b"olleh"), "data/in.txt": _b64(b"hello")}


@pytest.mark.slow
def test_javascript_runs_with_bigint(served: str) -> None:
    response = _run(served, code="console.log((2n ** 70n).toString())", language="nodejs")
    assert response.status == "Success"
    assert response.run_result is not None
    assert response.run_result.stdout == f"{2**70}\n"


@pytest.mark.slow
def test_nonzero_exit_is_failed_with_its_code_and_stderr(served: str) -> None:
    response = _run(
        served, code="import sys\nsys.stderr.write('bad')\nsys.exit(3)", language="python"
    )
    assert response.status == "Failed"
    assert response.run_result is not None
    assert response.run_result.status == "Finished"
    assert (response.run_result.return_code, response.run_result.stderr) == (3, "bad")


@pytest.mark.slow
def test_endless_program_is_a_time_limit_with_what_it_printed(served: str) -> None:
    started = time.monotonic()
    response = _run(
        served,
        code="print('begun', flush=True)\nwhile True:\n    pass\n",
        language="python",
        run_timeout=1,
    )
    assert time.monotonic() - started < 20
    assert response.status == "Failed"
    assert response.run_result is not None
    assert response.run_result.status == "TimeLimitExceeded"
    assert response.run_result.return_code is None
    assert response.run_result.stdout == "begun\n"


@pytest.mark.slow
def test_julia_is_a_clear_not_available_error(served: str) -> None:
    with pytest.raises(Exception, match="julia is not available: no Julia runtime"):
        _run(served, code="println(1)", language="julia")


@pytest.mark.slow
def test_code_runs_unprivileged_without_network_or_host_files(served: str, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only")
    listener = socket.create_server(("127.0.0.1", 0))
    code = (
        "import os, socket\n"
        "print('uid', os.getuid())\n"
        f"print('secret', os.path.exists({str(secret)!r}))\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), timeout=2)\n"
        "    print('connected')\n"
        "except OSError:\n"
        "    print('no network')\n"
    )
    with listener:
        response = _run(served, code=code, language="python")
    assert response.run_result is not None
    lines = response.run_result.stdout.splitlines()  # type: ignore[union-attr]
    assert lines[0] != "uid 0" and lines[0].startswith("uid ")
    assert lines[1:] == ["secret False", "no network"]


@pytest.mark.slow
def test_sigterm_stops_the_server_and_frees_the_port(venv_bin: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [str(venv_bin / "atoll"), "sandbox", "fusion-serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    assert "http://127.0.0.1" in proc.stdout.readline()
    assert httpx.get(f"http://127.0.0.1:{port}/v1/ping", timeout=10).json() == "pong"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/ping", timeout=5)


@pytest.mark.slow
def test_a_taken_port_is_one_error_line(venv_bin: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(venv_bin / "atoll"), "sandbox", "fusion-serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: cannot listen on 127.0.0.1:")
    assert len(done.stderr.strip().splitlines()) == 1


# --- requests the server refuses or answers strictly, in-process ------------------------------


@pytest.mark.slow
def test_ping_and_unknown_paths(embedded: str) -> None:
    assert httpx.get(f"{embedded}/v1/ping").json() == "pong"
    assert httpx.get(f"{embedded}/nothing").status_code == 404
    assert httpx.post(f"{embedded}/run_jupyter", json={"cells": []}).status_code == 404


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        {"language": "python", "stdin": "print(1)"},  # no code
        {"code": "print(1)", "language": "cobol"},
        {"code": "print(1)", "language": "python", "run_timeout": "soon"},
    ],
)
def test_invalid_requests_are_422_without_echoing_code(embedded: str, body: dict) -> None:
    response = httpx.post(f"{embedded}/run_code", json=body)
    assert response.status_code == 422
    assert "detail" in response.json()
    assert "print(1)" not in response.text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["../escape.txt", "/etc/evil", "a/../../b"])
def test_file_names_outside_the_workspace_are_refused(embedded: str, name: str) -> None:
    body = {"code": "print(1)", "language": "python", "files": {name: _b64(b"x")}}
    response = httpx.post(f"{embedded}/run_code", json=body)
    assert response.status_code == 422
    assert "relative paths inside the workspace" in response.json()["detail"]


@pytest.mark.slow
def test_a_fetched_link_to_a_host_file_is_not_followed(embedded: str, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only")
    code = (
        "import os\n"
        f"os.symlink({str(secret)!r}, 'leak.txt')\n"
        "os.symlink('/etc', 'etc-link')\n"
        "open('honest.txt', 'w').write('mine')\n"
    )
    response = _run(
        embedded,
        code=code,
        language="python",
        fetch_files=["leak.txt", "etc-link/passwd", "honest.txt"],
    )
    assert response.status == "Success"
    assert response.files == {"honest.txt": _b64(b"mine")}


@pytest.mark.slow
def test_code_that_is_not_unicode_text_is_refused(embedded: str) -> None:
    body = b'{"code": "print(1)  # \\ud800", "language": "python"}'
    response = httpx.post(
        f"{embedded}/run_code", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert "print(1)" not in response.text


@pytest.mark.slow
def test_conflicting_file_names_are_refused(embedded: str) -> None:
    files = {"data": _b64(b"a file"), "data/inner.txt": _b64(b"under it")}
    body = {"code": "print(1)", "language": "python", "files": files}
    response = httpx.post(f"{embedded}/run_code", json=body)
    assert response.status_code == 422
    assert "cannot write files['data/inner.txt']" in response.json()["detail"]


@pytest.mark.slow
def test_a_failing_backend_is_a_sandbox_error_not_a_failed_run() -> None:
    with EmbeddedFusionServer(backend=flawed_backends.Crashes()) as server:
        body = {"code": "print(1)", "language": "python"}
        answer = httpx.post(f"{server.url}/run_code", json=body).json()
        with pytest.raises(Exception, match="Sandbox responded with error: the sandbox failed"):
            _run(server.url, code="print(1)", language="python")
    assert answer["status"] == "SandboxError"
    assert answer["run_result"] is None
    assert answer["message"] == "the sandbox failed: RuntimeError: backend bug"


@pytest.mark.slow
def test_too_long_a_run_timeout_is_refused(embedded: str) -> None:
    body = {"code": "print(1)", "language": "python", "run_timeout": 10_000}
    response = httpx.post(f"{embedded}/run_code", json=body)
    assert response.status_code == 422
    assert "run_timeout" in response.json()["detail"]


# --- loopback only -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "http://localhost:8080/",
        "http://[::1]:8080",
        "http://127.3.2.1",
        "https://LOCALHOST:1",
    ],
)
def test_loopback_urls_are_accepted(url: str) -> None:
    assert require_loopback_url(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5:8080",
        "http://0.0.0.0:8080",
        "http://sandbox.internal:8080",
        "ftp://127.0.0.1/",
        "http://127.0.0.1:notaport",
    ],
)
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(NotLoopbackError):
        require_loopback_url(url)


def test_the_server_binds_loopback_only() -> None:
    assert is_loopback_host("::1") and not is_loopback_host("0.0.0.0")
    with pytest.raises(NotLoopbackError, match="binds loopback only"):
        FusionServer(0, host="0.0.0.0")
