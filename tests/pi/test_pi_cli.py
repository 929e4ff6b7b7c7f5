"""`atoll pi` and `atoll doctor`: one line for bad input, and the container gone after a kill."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from pi_support import KEY_ENV, call, say, turns
from support.processes import processes_in

from atoll.pi import container, workspace

pytestmark = [pytest.mark.docker]


def atoll(venv_bin: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TERM": "dumb", "COLUMNS": "200", **env},
    )


def test_image_build_and_install_say_what_they_have(venv_bin, pi, rollout_image):
    built = atoll(venv_bin, "pi", "image", "build")
    assert built.returncode == 0, built.stderr
    assert rollout_image.image_id in built.stdout
    assert "already current" in built.stdout and "lacks Julia" in built.stdout
    installed = atoll(venv_bin, "pi", "install")
    assert installed.returncode == 0 and "Pi 0.73.1 at" in installed.stdout


def test_doctor_reports_node_pi_and_the_image(venv_bin, pi, rollout_image):
    done = atoll(
        venv_bin, "doctor", "--only", "node", "--only", "pi", "--only", "pi-image", "--json"
    )
    assert done.returncode == 0, done.stderr
    rows = {row["requirement"]: row for row in json.loads(done.stdout)}
    assert rows["node"]["status"] == "ok" and "v2" in rows["node"]["found"]
    assert rows["pi"]["status"] == "ok" and "0.73.1" in rows["pi"]["found"]
    assert rows["pi-image"]["status"] == "ok" and "lacks Julia" in rows["pi-image"]["found"]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--language", "julia"], {KEY_ENV: "k"}, "lacks Julia"),
        (["--language", "cobol"], {KEY_ENV: "k"}, "unknown language 'cobol'"),
        ([], {}, f"the environment variable {KEY_ENV} holding the model's API key is not set"),
        (["--file", "../up=/etc/hostname"], {KEY_ENV: "k"}, "must be relative"),
        (["--ak", "max_turns=none"], {KEY_ENV: "k"}, "--ak max_turns"),
    ],
)
def test_bad_rollouts_are_one_line_and_status_2(
    venv_bin, pi, rollout_image, tmp_path, args, env, message
):
    clean = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    done = subprocess.run(
        [str(venv_bin / "atoll"), "pi", "run", "-p", "hi", "-o", str(tmp_path / "r")]
        + ["--ak", "base_url=http://127.0.0.1:9/v1", "--ak", "model=m"]
        + ["--ak", f"api_key_env={KEY_ENV}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "TERM": "dumb", "COLUMNS": "300", **env},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r" / "record.json").exists()


def _owned_containers(client: object, pid: int) -> list[str]:
    label = f"{container.OWNER_LABEL}={socket.gethostname()}:{pid}"
    return [c["Id"] for c in client.api.containers(all=True, filters={"label": label})]  # type: ignore[attr-defined]


def _wait(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_container_is_gone_after_the_atoll_process_is_killed(
    venv_bin, pi, docker_client, rollout_image, provider, api_key, tmp_path, signum
):
    provider.script = turns(call("bash", command="sleep 100"), say("too late"))
    out = tmp_path / "rollout"
    spaces = tmp_path / "workspaces"
    spaces.mkdir()
    process = subprocess.Popen(
        [str(venv_bin / "atoll"), "pi", "run", "-p", "wait", "-o", str(out)]
        + ["--ak", f"base_url={provider.base_url}", "--ak", "model=scripted"]
        + ["--ak", f"api_key_env={KEY_ENV}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TERM": "dumb", workspace.ROOT_ENV: str(spaces)},
    )
    try:
        # Running: the container is up and the model's command sleeps in it.
        assert _wait(lambda: (out / "bridge.jsonl").exists() and provider.chat_requests(), 60)
        assert _wait(lambda: bool(_owned_containers(docker_client, process.pid)), 30)
        time.sleep(1.0)
        assert processes_in(out), "Pi is not running"
        process.send_signal(signum)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _wait(lambda: not _owned_containers(docker_client, process.pid), 30)
    assert _wait(lambda: not processes_in(out), 15), "Pi outlived the atoll process"
    left = list(spaces.iterdir())
    if signum == signal.SIGTERM:
        assert left == []  # unwound like Ctrl-C: the workspace went with the container
        # One line and 128 + SIGTERM, not Python's traceback.
        stderr = process.stderr.read().decode() if process.stderr else ""
        assert process.returncode == 128 + signal.SIGTERM, stderr
        assert "Traceback" not in stderr and "error: interrupted" in stderr
        assert not (out / "record.json").exists()
    else:
        assert len(left) == 1  # nothing ran after SIGKILL; the next run sweeps it
        assert workspace.sweep_stale(spaces) == left and list(spaces.iterdir()) == []
