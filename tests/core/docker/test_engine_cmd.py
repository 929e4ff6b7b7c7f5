"""`atoll docker up|status|down` against real dockerd instances.

The session's engine (started by CI) is only queried and re-`up`ed; starting
and stopping are tested on a second, private instance with its own socket and
data directory, which re-imports the base image from the cached rootfs.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ci
from support.processes import children_of, pids_mentioning, running
from support.waiting import wait_for

from atoll.core import process_group
from atoll.core.docker_engine import EnginePaths
from atoll.core.docker_engine.base_image import tarball as base_tarball
from atoll.core.docker_engine.daemon import owned_pid, query
from atoll.core.mounts import mount_points

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def atoll(cmd: list[str], *args: str, env: dict[str, str] | None = None, timeout: float = 240):
    return subprocess.run(
        [*cmd, "docker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TERM": "dumb", "COLUMNS": "200", **(env or {})},
    )


def test_status_describes_the_running_engine(atoll_cmd, session_engine, base_image):
    import docker

    done = atoll(atoll_cmd, "status")
    assert done.returncode == 0, done.stderr
    pid = owned_pid(session_engine)
    assert pid is not None
    client = docker.DockerClient(base_url=session_engine.docker_host, version="auto")
    try:
        image_id = client.images.get(base_image).id
        version = client.version()["Version"]
    finally:
        client.close()
    assert f"running pid {pid}, dockerd {version}" in done.stdout
    assert f"{base_image} {image_id}" in done.stdout
    assert str(session_engine.socket) in done.stdout


def test_second_up_does_nothing(atoll_cmd, session_engine):
    pid = owned_pid(session_engine)
    started = time.monotonic()
    done = atoll(atoll_cmd, "up", "--print-env")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    assert "nothing to do" in done.stderr
    assert done.stdout.strip() == f"export DOCKER_HOST={session_engine.docker_host}"
    assert owned_pid(session_engine) == pid


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A short run directory (unix socket paths are limited), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="atd-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_missing_dockerd_is_one_clear_line(atoll_cmd, tmp_path, run_dir):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    done = atoll(
        atoll_cmd,
        "up",
        "--state-dir",
        str(tmp_path / "state"),
        "--run-dir",
        str(run_dir),
        env={"PATH": str(bin_dir)},
    )
    assert done.returncode == 1
    assert "apt-get install -y docker.io" in done.stderr
    assert "Traceback" not in done.stderr


def test_socket_held_by_a_stranger_is_left_alone(atoll_cmd, tmp_path, run_dir):
    stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stranger.bind(str(run_dir / "docker.sock"))
    stranger.listen()
    try:
        done = atoll(
            atoll_cmd, "up", "--state-dir", str(tmp_path / "state"), "--run-dir", str(run_dir)
        )
        assert done.returncode == 1
        assert "in use by a process atoll did not start" in done.stderr
        assert (run_dir / "docker.sock").exists()
        down = atoll(
            atoll_cmd, "down", "--state-dir", str(tmp_path / "state"), "--run-dir", str(run_dir)
        )
        assert down.returncode == 0 and "nothing to stop" in down.stderr
    finally:
        stranger.close()


@pytest.mark.docker_engine_alone  # a second dockerd rewrites the packet filter every container uses
def test_second_instance_up_status_down(atoll_cmd, session_engine, tmp_path, run_dir):
    """A fresh engine: no debootstrap means a clear error; from the cache it comes up."""
    cached = base_tarball(session_engine)
    ci.need(cached.is_file(), f"no cached base rootfs at {cached}", "CI builds it first")
    state = tmp_path / "state"
    config = tmp_path / "docker-config"
    env = {"DOCKER_CONFIG": str(config)}
    paths = EnginePaths.from_options(state, run_dir)
    args = ("--state-dir", str(state), "--run-dir", str(run_dir))
    try:
        # Without debootstrap and without a cached rootfs the base image cannot be made.
        no_debootstrap = tmp_path / "bin"
        no_debootstrap.mkdir()
        for tool in ("dockerd", "containerd", "containerd-shim-runc-v2", "runc", "tar"):
            found = shutil.which(tool)
            if found:
                (no_debootstrap / tool).symlink_to(found)
        done = atoll(atoll_cmd, "up", *args, env={**env, "PATH": str(no_debootstrap)})
        assert done.returncode == 1, done.stderr
        assert "apt-get install -y debootstrap" in done.stderr
        assert query(paths) is not None  # the engine itself did come up

        paths.base_dir.mkdir(parents=True)
        base_tarball(paths).symlink_to(cached)
        done = atoll(atoll_cmd, "up", *args, env=env)
        assert done.returncode == 0, done.stderr
        assert "from cache" in done.stderr
        link = config / "cli-plugins" / "docker-compose"
        assert os.access(link, os.X_OK)
        compose = subprocess.run(
            ["docker", "compose", "version"],
            capture_output=True,
            text=True,
            env={**os.environ, **env, "DOCKER_HOST": paths.docker_host},
            check=False,
        )
        assert "Docker Compose version" in compose.stdout, compose.stderr
        # A container on the host network makes dockerd mount its default netns.
        host_net = subprocess.run(
            ["docker", "run", "--rm", "--network", "host", "atoll/base:bookworm", "true"],
            capture_output=True,
            text=True,
            env={**os.environ, **env, "DOCKER_HOST": paths.docker_host},
            check=False,
        )
        assert host_net.returncode == 0, host_net.stderr

        again = atoll(atoll_cmd, "up", *args, env=env)
        assert again.returncode == 0 and "nothing to do" in again.stderr
        status = atoll(atoll_cmd, "status", *args, env=env)
        assert status.returncode == 0 and "running pid" in status.stdout

        down = atoll(atoll_cmd, "down", *args, env=env)
        assert down.returncode == 0, down.stderr
        assert "stopped dockerd" in down.stderr
        assert query(paths) is None and not paths.socket.exists()
        # Nothing stays mounted under the run directory (dockerd leaves its netns/default).
        assert [m for m in mount_points() if m.startswith(str(run_dir))] == []
        status = atoll(atoll_cmd, "status", *args, env=env)
        assert status.returncode == 1 and "not running" in status.stdout
        # The session's engine is untouched.
        assert query(session_engine) is not None
    finally:
        atoll(atoll_cmd, "down", *args, env=env)
        leftover = pids_mentioning(str(run_dir))
        shutil.rmtree(state, ignore_errors=True)  # a whole image store: do not keep it
    assert leftover == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_dockerd_starts_stops_its_whole_group(atoll_cmd, tmp_path, run_dir, signum):
    """`up` leaves dockerd running only once it answers; interrupted before, it leaves nothing."""
    real = shutil.which("dockerd")
    ci.need(real is not None, "no dockerd here", "CI installs docker.io")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A dockerd that takes its time to start: the signal surely lands while `up` waits for it.
    (bin_dir / "dockerd").write_text(f'#!/bin/sh\nsleep 60\nexec {real} "$@"\n')
    (bin_dir / "dockerd").chmod(0o755)
    command = subprocess.Popen(
        [*atoll_cmd, "docker", "up", "--skip-base-image", "--state-dir", str(tmp_path / "state"),
         "--run-dir", str(run_dir)],
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TERM": "dumb"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: children_of(command.pid), 60, "dockerd is started")
        (leader,) = children_of(command.pid)
        wait_for(lambda: len(process_group.members(leader)) >= 2, 10, "its sleep runs")
        members = process_group.members(leader)
        command.send_signal(signum)
        # Read its stderr while it ends: a command that writes more than a pipe holds would
        # otherwise block on the write and never exit.
        _, err = command.communicate(timeout=60)
        assert command.returncode != 0, err
        assert not process_group.group_alive(leader)
        assert not [pid for pid in members if running(pid)]
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
