"""Where the private engine keeps its socket, runtime state, data and logs.

Two roots, because they have different needs: the *state* directory holds
durable things (image data, the cached base rootfs, logs) and may sit deep in
a home directory; the *run* directory holds the socket and dockerd's exec-root,
which must stay short because a unix socket path is limited to 108 bytes
(containerd puts its own sockets under the exec-root).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from atoll.core.docker_engine.errors import EngineError
from atoll.core.user_dirs import data_dir

BASE_IMAGE = "atoll/base:bookworm"

STATE_DIR_ENV = "ATOLL_DOCKER_STATE_DIR"
RUN_DIR_ENV = "ATOLL_DOCKER_RUN_DIR"

# Longest path a sun_path can hold, less room for containerd's deeper sockets.
_SOCKET_PATH_MAX = 107
_EXEC_ROOT_MAX = 70  # room for "/containerd/containerd.sock.ttrpc"


def default_state_dir() -> Path:
    """`$ATOLL_DOCKER_STATE_DIR`, else `docker/` in atoll's data directory (~/.local/share/atoll)."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return data_dir("docker")


def default_run_dir() -> Path:
    """`$ATOLL_DOCKER_RUN_DIR`, else `$XDG_RUNTIME_DIR/atoll-docker`, else /tmp/atoll-docker-<uid>."""
    explicit = os.environ.get(RUN_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "atoll-docker"
    return Path("/tmp") / f"atoll-docker-{os.getuid()}"


@dataclass(frozen=True)
class EnginePaths:
    """Every path one private engine instance uses; two instances need two of these."""

    state_dir: Path
    run_dir: Path

    @classmethod
    def from_options(
        cls, state_dir: Path | None = None, run_dir: Path | None = None
    ) -> EnginePaths:
        paths = cls(
            state_dir=(state_dir or default_state_dir()).expanduser().absolute(),
            run_dir=(run_dir or default_run_dir()).expanduser().absolute(),
        )
        paths.validate()
        return paths

    def validate(self) -> None:
        if len(str(self.socket).encode()) > _SOCKET_PATH_MAX:
            raise EngineError(
                f"socket path {self.socket} is longer than a unix socket allows; "
                f"choose a shorter --run-dir (or ${RUN_DIR_ENV})"
            )
        if len(str(self.exec_root).encode()) > _EXEC_ROOT_MAX:
            raise EngineError(
                f"exec-root {self.exec_root} is too long for containerd's sockets; "
                f"choose a shorter --run-dir (or ${RUN_DIR_ENV})"
            )

    @property
    def socket(self) -> Path:
        return self.run_dir / "docker.sock"

    @property
    def exec_root(self) -> Path:
        return self.run_dir / "exec"

    @property
    def pidfile(self) -> Path:
        return self.run_dir / "dockerd.pid"

    @property
    def data_root(self) -> Path:
        return self.state_dir / "data"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "dockerd.log"

    @property
    def lock_file(self) -> Path:
        return self.state_dir / "engine.lock"

    @property
    def compose_dir(self) -> Path:
        return self.state_dir / "compose"

    @property
    def base_dir(self) -> Path:
        return self.state_dir / "base"

    def base_tarball(self, recipe: str) -> Path:
        """The cached rootfs of one base recipe (suite + packages): a new recipe, a new file."""
        return self.base_dir / f"{recipe}-rootfs.tar"

    @property
    def base_record(self) -> Path:
        return self.base_dir / "bookworm-image.json"

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket}"


def default_docker_host() -> str:
    """The DOCKER_HOST of the default private engine (whether or not it runs)."""
    return EnginePaths.from_options().docker_host
