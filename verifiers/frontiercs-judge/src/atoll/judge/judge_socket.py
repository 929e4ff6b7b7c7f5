"""The judge's unix socket: how a trial with no network reaches the judge, and nothing else.

A task's verifier runs without a network (`[verifier] network_mode =
"no-network"`); the host mounts one directory into the trial, holding only
the judge's socket, at `/run/frontiercs-judge`. Whatever serves the socket on
the host (the judge itself, or a relay to a judge elsewhere) decides where
submissions go; inside the trial there is no address to choose and no other
service to reach. The directory is named by `FRONTIERCS_JUDGE_SOCKET_DIR`,
which the task's docker-compose.yaml mounts and atoll-local binds.

Socket paths are short on purpose (a unix socket path has at most 107
bytes), so the directory is a fresh one under the temporary directory unless
the user names one.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from atoll.judge import leftovers

SOCKET_DIR_ENV = "FRONTIERCS_JUDGE_SOCKET_DIR"
SOCKET_NAME = "judge.sock"
# Where the task's environment mounts the socket directory, inside the trial.
TRIAL_SOCKET_DIR = "/run/frontiercs-judge"
MAX_SOCKET_PATH = 107
HEALTH_TIMEOUT_S = 5.0


class SocketDirError(Exception):
    """The socket directory cannot be used; the message says what to change."""


def new_socket_dir() -> Path:
    """A fresh, private-to-create but world-traversable directory for one socket.

    Those that killed judges left are removed first (see `leftovers`).
    """
    leftovers.remove_stale_temp_dirs()
    directory = leftovers.temp_dir(leftovers.SOCKET_PREFIX)
    directory.chmod(0o755)  # a trial's unprivileged verifier must reach the socket
    return directory


def socket_path(directory: Path) -> Path:
    path = directory / SOCKET_NAME
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise SocketDirError(
            f"{path} is longer than a unix socket path may be ({MAX_SOCKET_PATH} bytes); "
            f"set {SOCKET_DIR_ENV} to a shorter directory"
        )
    return path


def bind(directory: Path) -> socket.socket:
    """A listening unix socket at `<directory>/judge.sock` that any local user may connect to.

    A stale socket left by a judge that was killed is replaced; anything else
    at that path is an error, never deleted.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SocketDirError(f"cannot create {directory}: {exc.strerror}") from None
    path = socket_path(directory)
    if path.is_socket():
        if answers(path, timeout_s=1.0):
            raise SocketDirError(f"a judge already serves {path}; stop it or use another directory")
        path.unlink()
    elif path.exists():
        raise SocketDirError(
            f"{path} exists and is not a socket; remove it or use another directory"
        )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        path.chmod(0o666)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise SocketDirError(f"cannot listen on {path}: {exc.strerror}") from None
    return sock


def remove(directory: Path, *, created: bool) -> None:
    """Remove the socket, and the directory too if this process created it."""
    path = directory / SOCKET_NAME
    if path.is_socket():
        path.unlink(missing_ok=True)
    if created:
        shutil.rmtree(directory, ignore_errors=True)


def answers(path: Path, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether a judge answers GET /health on the unix socket at `path`."""
    import httpx  # only a caller that probes pays for the HTTP client

    from atoll.judge.client import JudgeClient

    transport = httpx.HTTPTransport(uds=str(path))
    with JudgeClient(
        "http://frontiercs-judge", request_timeout=timeout_s, transport=transport
    ) as c:
        return c.health()
