"""Start, probe and stop the private dockerd, and only the one atoll started.

Ownership is decided by dockerd's own pidfile in the run directory: a live
process named there whose command line names our socket is ours; anything
else answering on the socket is foreign and is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from atoll.core import process_group
from atoll.core.docker_engine.errors import EngineError
from atoll.core.docker_engine.files import tail
from atoll.core.docker_engine.paths import EnginePaths
from atoll.core.mounts import unmount_below
from atoll.core.processes import alive, cmdline

START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0


@dataclass(frozen=True)
class EngineInfo:
    pid: int
    socket: Path
    version: str
    api_version: str


def dockerd_binary() -> str:
    path = shutil.which("dockerd")
    if path is None:
        raise EngineError(
            "dockerd is not installed; install it with `apt-get install -y docker.io`"
        )
    return path


def owned_pid(paths: EnginePaths) -> int | None:
    """The pid of the live dockerd this run directory's pidfile names, if it serves our socket."""
    try:
        pid = int(paths.pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    argv = cmdline(pid)
    if not argv or not Path(argv[0]).name.startswith("dockerd"):
        return None
    if not any(str(paths.socket) in arg for arg in argv):
        return None
    return pid


def socket_answers(path: Path) -> bool:
    """Whether some process accepts connections on the unix socket `path`."""
    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def query(paths: EnginePaths, timeout: int = 5) -> EngineInfo | None:
    """Version details of the engine on our socket, or None when nothing answers."""
    import docker
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    if not paths.socket.exists():
        return None
    try:
        client = docker.DockerClient(base_url=paths.docker_host, timeout=timeout, version="auto")
    except (DockerException, RequestException, OSError):
        return None
    try:
        version = client.version()
    except (DockerException, RequestException, OSError):
        return None
    finally:
        client.close()
    return EngineInfo(
        pid=owned_pid(paths) or 0,
        socket=paths.socket,
        version=str(version.get("Version", "?")),
        api_version=str(version.get("ApiVersion", "?")),
    )


def start(paths: EnginePaths, deadline_s: float = START_DEADLINE_S) -> EngineInfo:
    """Start dockerd on our socket and wait until it answers; EngineError otherwise."""
    binary = dockerd_binary()
    if os.geteuid() != 0:
        raise EngineError(
            "the private engine runs dockerd, which needs root; run `atoll docker up` as root"
        )
    if socket_answers(paths.socket):
        raise EngineError(
            f"{paths.socket} is in use by a process atoll did not start; stop it, "
            "or pick another --run-dir"
        )
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()  # stale: nothing listens on it
    for directory in (paths.run_dir, paths.exec_root, paths.data_root, paths.state_dir):
        directory.mkdir(parents=True, exist_ok=True)
    os.chmod(paths.run_dir, 0o700)
    argv = [
        binary,
        "--host",
        paths.docker_host,
        "--data-root",
        str(paths.data_root),
        "--exec-root",
        str(paths.exec_root),
        "--pidfile",
        str(paths.pidfile),
        "--iptables=false",
        "--bridge=none",
    ]
    # Stopped again unless it answers: an error, Ctrl-C or SIGTERM while it starts leaves none.
    with process_group.Owner(STOP_DEADLINE_S) as owner:
        with paths.log_file.open("ab") as log:
            offset = log.tell()
            log.write(f"--- atoll: starting {' '.join(argv)}\n".encode())
            log.flush()
            process = owner.spawn(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True
            )
        give_up = time.monotonic() + deadline_s
        while time.monotonic() < give_up:
            if process.poll() is not None:
                raise EngineError(
                    f"dockerd exited with status {process.returncode} while starting; "
                    f"its log ({paths.log_file}) ends with:\n{tail(paths.log_file, since=offset)}"
                )
            info = query(paths, timeout=2)
            if info is not None:
                owner.release(process)
                return EngineInfo(process.pid, info.socket, info.version, info.api_version)
            time.sleep(0.2)
        owner.stop()
        raise EngineError(
            f"dockerd did not answer on {paths.socket} within {deadline_s:.0f} s and was stopped; "
            f"its log ({paths.log_file}) ends with:\n{tail(paths.log_file, since=offset)}"
        )


def wait_owned(paths: EnginePaths, pid: int, deadline_s: float = START_DEADLINE_S) -> EngineInfo:
    """Wait for our already-running dockerd (perhaps still starting) to answer."""
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        info = query(paths, timeout=2)
        if info is not None:
            return info
        if not alive(pid):
            break
        time.sleep(0.2)
    raise EngineError(
        f"dockerd (pid {pid}, started by atoll) does not answer on {paths.socket}; restart it "
        f"with `atoll docker down && atoll docker up`; {paths.log_file} ends with:\n"
        f"{tail(paths.log_file)}"
    )


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(paths: EnginePaths, deadline_s: float = STOP_DEADLINE_S) -> int | None:
    """Stop the engine our pidfile names (SIGTERM, then SIGKILL); its pid, or None if none ran."""
    pid = owned_pid(paths)
    if pid is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        if os.getpgid(pid) != pid:
            raise EngineError(
                f"dockerd (pid {pid}) was not started by `atoll docker up` (it leads no process "
                f"group of its own); stop it the way it was started"
            )
    try:
        # dockerd leads the session atoll started it in: its group is what it started.
        process_group.stop_group(pid, deadline_s, reap=lambda: _reap(pid))
    except process_group.GroupStillRunning as exc:
        raise EngineError(f"dockerd (pid {pid}) did not stop: {exc}") from None
    for leftover in (paths.socket, paths.pidfile):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    # dockerd leaves its default network namespace mounted there, which keeps
    # the run directory from being removed.
    unmount_below(paths.exec_root)
    return pid
