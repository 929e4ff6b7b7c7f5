"""`atoll stack up|status|down` against the real `reef serve`, in search-only (upstream) mode."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reef_client import ReefClient
from stack_support import atoll, marked_processes
from support.ports import free_port

from atoll.stack import health

pytestmark = pytest.mark.timeout(300)


def _up(env: dict[str, str], upstream_root: str, port: int, stack_dir: Path, *extra: str):
    return atoll(
        ["stack", "up", "--training", "off", "--upstream-url", upstream_root + "/v1",
         "--port", str(port), "--stack-dir", str(stack_dir), f"state_dir={stack_dir.parent / 'state'}",
         *extra],
        env,
    )  # fmt: skip


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def _wait_gone(mark: str, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := marked_processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.slow
def test_up_serves_detached_and_down_stops_everything(tmp_path, upstream, stack_env, mark):
    port = free_port()
    stack_dir = tmp_path / "stack"
    up = _up(stack_env, upstream.root_url, port, stack_dir)
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == f"http://127.0.0.1:{port}"
    assert "search-only (training off)" in up.stderr

    # The command has returned; what it started keeps serving.
    recorded = json.loads((stack_dir / "stack.json").read_text())
    names = [p["name"] for p in recorded["processes"]]
    assert names == ["reef-serve", "reef:reef"]
    assert marked_processes(mark)
    body, receipt = ReefClient(
        up.stdout.strip(), token=stack_env["REEF_TOKEN"]
    ).inference_with_record(
        "stack-test",
        "/v1/chat/completions",
        {"model": "guide", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert receipt
    assert body["choices"][0]["message"]["content"] == "<guidance>try a greedy fill</guidance>"
    assert [r.body["model"] for r in upstream.chat_requests()] == ["guide"]

    # No secret in what atoll wrote; Reef's own resolved configuration holds it, readable by owner only.
    for written in (stack_dir / "serve.yaml", stack_dir / "stack.json"):
        assert stack_env["REEF_TOKEN"] not in written.read_text()
    (resolved,) = (stack_dir / "reef-run").glob("*/runtime.yaml")
    assert resolved.stat().st_mode & 0o077 == 0
    assert "${REEF_TOKEN:?}" in (stack_dir / "serve.yaml").read_text()
    assert (stack_dir / "logs" / "reef-serve.log").stat().st_size > 0

    status = atoll(["stack", "status", "--stack-dir", str(stack_dir)], stack_env)
    assert status.returncode == 0
    assert f"reef: http://127.0.0.1:{port} (search-only, healthy)" in status.stdout
    assert "reef-serve: pid" in status.stdout and "running" in status.stdout

    down = atoll(["stack", "down", "--stack-dir", str(stack_dir)], stack_env)
    assert down.returncode == 0, down.stderr
    assert "stopped reef-serve, reef:reef" in down.stderr
    assert _wait_gone(mark) == []
    assert not health.healthy(f"http://127.0.0.1:{port}")
    assert not (stack_dir / "stack.json").exists()
    # Once down, no file under the stack directory holds the token.
    token = stack_env["REEF_TOKEN"].encode()
    assert [p for p in stack_dir.rglob("*") if p.is_file() and token in p.read_bytes()] == []
    again = atoll(["stack", "down", "--stack-dir", str(stack_dir)], stack_env)
    assert again.returncode == 0 and "nothing was started" in again.stderr


@pytest.mark.slow
def test_an_existing_reef_is_used_and_left_running(tmp_path, upstream, stack_env, mark):
    port = free_port()
    first = _up(stack_env, upstream.root_url, port, tmp_path / "first")
    assert first.returncode == 0, first.stderr
    try:
        second = _up(stack_env, upstream.root_url, port, tmp_path / "second")
        assert second.returncode == 0, second.stderr
        assert "using the Reef already running" in second.stderr
        down = atoll(["stack", "down", "--stack-dir", str(tmp_path / "second")], stack_env)
        assert down.returncode == 0
        assert "already running; left running" in down.stderr
        assert health.is_reef(f"http://127.0.0.1:{port}")
    finally:
        atoll(["stack", "down", "--stack-dir", str(tmp_path / "first")], stack_env)
    assert _wait_gone(mark) == []


@pytest.mark.slow
def test_port_in_use_fails_in_one_line_and_starts_nothing(tmp_path, upstream, stack_env, mark):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        up = _up(stack_env, upstream.root_url, port, tmp_path / "stack")
    assert up.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use by a program that is not Reef" in _one_error_line(
        up.stderr
    )
    assert marked_processes(mark) == []
    assert not (tmp_path / "stack" / "stack.json").exists()


@pytest.mark.slow
def test_a_stack_that_misses_its_deadline_is_stopped(tmp_path, upstream, stack_env, mark):
    up = _up(
        stack_env, upstream.root_url, free_port(), tmp_path / "stack", "--ready-timeout", "0.5"
    )
    assert up.returncode == 2
    line = _one_error_line(up.stderr)
    assert "Reef did not become healthy at" in line and "within 0.5 s; last log lines:" in line
    assert _wait_gone(mark) == []
    assert not (tmp_path / "stack" / "stack.json").exists()
    assert not list((tmp_path / "stack" / "reef-run").glob("*/runtime.yaml"))


@pytest.mark.slow
def test_a_stack_that_exits_during_start_reports_its_last_log_lines(tmp_path, stack_env, mark):
    # Reef itself refuses a non-HTTP upstream, after it has started: its log says why.
    up = atoll(
        ["stack", "up", "--training", "off", "--upstream-url", "ftp://127.0.0.1:1", "--port", str(free_port()),
         "--stack-dir", str(tmp_path / "stack"), f"state_dir={tmp_path / 'state'}"],
        stack_env,
    )  # fmt: skip
    assert up.returncode == 2
    line = _one_error_line(up.stderr)
    assert "Reef exited before it became healthy; last log lines:" in line
    assert "--inference.upstream-url must be an HTTP(S) URL" in line
    assert _wait_gone(mark) == []


@pytest.mark.slow
def test_bad_reef_home_fails_in_one_line_and_starts_nothing(tmp_path, stack_env, mark):
    (tmp_path / "checkout" / "recipes").mkdir(parents=True)
    up = atoll(
        ["stack", "up", "--training", "on", "--port", str(free_port()), "--stack-dir", str(tmp_path / "stack"),
         "--reef-home", str(tmp_path / "checkout")],
        stack_env,
    )  # fmt: skip
    assert up.returncode == 2
    assert "has no tttd recipe (recipes/tttd/recipe.py is missing)" in _one_error_line(up.stderr)
    assert marked_processes(mark) == []


@pytest.mark.slow
def test_training_without_gpus_is_one_clear_error(tmp_path, stack_env, mark):
    # A PATH with reef and git-lfs but no nvidia-smi: a machine without GPUs.
    tools = tmp_path / "bin"
    tools.mkdir()
    os.symlink(Path(stack_env["PATH"].split(":")[0]) / "reef", tools / "reef")
    os.symlink("/usr/bin/git-lfs", tools / "git-lfs")
    home = tmp_path / "checkout"
    (home / "recipes" / "tttd").mkdir(parents=True)
    (home / "recipes" / "tttd" / "recipe.py").write_text("")
    env = {**stack_env, "PATH": f"{tools}"}
    up = atoll(["stack", "up", "--training", "on", "--port", str(free_port()), "--stack-dir",
                str(tmp_path / "stack"), "--reef-home", str(home)], env)  # fmt: skip
    assert up.returncode == 2
    assert "training needs GPUs and nvidia-smi lists none" in _one_error_line(up.stderr)
    assert marked_processes(mark) == []


@pytest.mark.slow
def test_missing_git_lfs_is_one_clear_error(tmp_path, upstream, stack_env, mark):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(Path(stack_env["PATH"].split(":")[0]) / "reef", bin_dir / "reef")
    env = {**stack_env, "PATH": str(bin_dir)}
    up = _up(env, upstream.root_url, free_port(), tmp_path / "stack")
    assert up.returncode == 2
    assert "git-lfs is not installed" in _one_error_line(up.stderr)
    assert marked_processes(mark) == []


@pytest.mark.slow
def test_reef_beside_the_interpreter_is_found_without_an_activated_venv(
    tmp_path, upstream, stack_env, mark, venv_bin
):
    """`.venv/bin/atoll stack up` with a PATH that lacks the venv's bin/ (not activated)."""
    env = {**stack_env, "PATH": "/usr/bin:/bin"}  # git and git-lfs, but not the venv's bin/
    assert shutil.which("reef", path=env["PATH"]) is None
    port = free_port()
    stack_dir = tmp_path / "stack"
    up = subprocess.run(
        [str(venv_bin / "atoll"), "stack", "up", "--training", "off", "--upstream-url",
         upstream.root_url, "--port", str(port), "--stack-dir", str(stack_dir),
         f"state_dir={tmp_path / 'state'}"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        assert marked_processes(mark), "reef serve was not started"
    finally:
        down = atoll(["stack", "down", "--stack-dir", str(stack_dir)], env)
        assert down.returncode == 0, down.stderr
    assert _wait_gone(mark) == []


def test_no_reef_anywhere_is_one_clear_error(tmp_path, monkeypatch):
    from atoll.stack import preflight
    from atoll.stack.errors import StackError

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setattr(sys, "executable", str(empty / "python3"))
    with pytest.raises(StackError, match="no `reef` executable on PATH or beside this Python"):
        preflight.reef_executable({"PATH": str(empty)})


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_during_start_stops_what_was_started(
    signum, tmp_path, upstream, stack_env, mark
):
    # A `reef` that takes its time to start, so the interrupt surely lands before Reef is
    # healthy, however busy the machine: the command is then still starting it.
    tools = tmp_path / "bin"
    tools.mkdir()
    real = shutil.which("reef", path=stack_env["PATH"])
    assert real is not None
    (tools / "reef").write_text(f'#!/bin/sh\nsleep 60\nexec {real} "$@"\n')
    (tools / "reef").chmod(0o755)
    stack_env = {**stack_env, "PATH": f"{tools}:{stack_env['PATH']}"}
    stack_dir = tmp_path / "stack"
    command = subprocess.Popen(
        [sys.executable, "-m", "atoll.core.cli", "stack", "up", "--training", "off",
         "--upstream-url", upstream.root_url, "--port", str(free_port()), "--stack-dir", str(stack_dir),
         f"state_dir={tmp_path / 'state'}"],
        env=stack_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (stack_dir / "stack.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marked_processes(mark), "reef serve was not started"
    command.send_signal(signum)
    _, stderr = command.communicate(timeout=120)
    assert command.returncode == 128 + signum, stderr  # 130 for Ctrl-C, 143 for SIGTERM
    assert "interrupted; stopped what this command had started" in stderr
    assert _wait_gone(mark) == []
    assert not (stack_dir / "stack.json").exists()
