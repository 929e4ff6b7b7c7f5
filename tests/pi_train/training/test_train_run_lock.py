"""One `atoll pi train` command per run directory: a second one on the same `--out` is refused.

The first command is real: it takes the lock, writes its manifest and starts
the managed trainer, which waits on a Tinker address that accepts
connections and never answers (a listening socket on loopback), so it holds
the directory for as long as the test needs. The second command is refused
with one line naming the first; the first is then interrupted and leaves no
process behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from support.processes import processes_with_environment

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _train(venv_bin: Path, env: dict[str, str], out: Path, mode: str = "hidden") -> list[str]:
    return [
        str(venv_bin / "atoll"), "pi", "train", mode, "--base-model", "Qwen/Qwen3-0.6B",
        "--languages", "python", "--iterations", "1", "--out", str(out),
    ]  # fmt: skip


@pytest.mark.parametrize("mode", ["hidden", "shell"])
def test_a_second_command_on_the_same_out_is_refused_naming_the_first(
    venv_bin: Path, tmp_path: Path, mode: str
) -> None:
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    marker = f"ATOLL_TEST_RUN_LOCK={uuid.uuid4().hex}"
    env = {
        **os.environ,
        "TINKER_API_KEY": "tml-test-key",
        "TINKER_BASE_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
        marker.split("=")[0]: marker.split("=")[1],
    }
    out = tmp_path / "run"
    first = subprocess.Popen(
        _train(venv_bin, env, out, mode), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "manifest.json").is_file():
            assert first.poll() is None, first.communicate()[1].decode()
            assert time.monotonic() < deadline, "the first command never started its run"
            time.sleep(0.2)

        second = subprocess.run(
            _train(venv_bin, env, out, mode), env=env, capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 2
        # The progress bar's empty line may come first; the refusal is one error line.
        lines = [line for line in second.stderr.splitlines() if "error" in line]
        assert len(lines) == 1 and lines[0].startswith("error: "), second.stderr
        assert f"in use by `atoll pi train {mode}`" in lines[0]
        assert f"pid {first.pid}" in lines[0]
        assert first.poll() is None  # the first run goes on untouched
        assert json.loads((out / "manifest.json").read_text())["command"] == (
            f"atoll pi train {mode}"
        )
    finally:
        first.send_signal(signal.SIGINT)
        try:
            first.wait(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
    assert processes_with_environment(marker) == []

    # Once the first command has ended, the directory is free again for the next one.
    third = subprocess.Popen(
        _train(venv_bin, env, out, mode), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            holder = out / "writer.json"
            with contextlib.suppress(OSError, ValueError):
                if json.loads(holder.read_text())["pid"] == third.pid:
                    break
            assert third.poll() is None, third.communicate()[1].decode()
            assert time.monotonic() < deadline, "the third command never took the directory"
            time.sleep(0.2)
    finally:
        third.send_signal(signal.SIGINT)
        try:
            third.wait(timeout=60)
        finally:
            if third.poll() is None:
                third.kill()
                third.wait()
            silent.close()
