"""The rollout's own container: hardened, digest-pinned, and gone when its owner is.

One container per rollout on the private Docker engine: no network, a
read-only root, every capability dropped, no privilege gain, limits on
processes, memory, CPU, file size and open files, a private /tmp, and only the
rollout's workspace mounted (at /workspace). Pi's tools run in it as the
image's unprivileged `rollout` user (uid 10001), one `docker exec` each.

The container's own process is `cat` reading the stdin of an attach
connection this process holds, running as a second unprivileged uid that the
tools cannot signal. When this process ends for any reason (a normal return,
Ctrl-C, SIGTERM, even SIGKILL) the kernel closes that connection, `cat` sees
end of file, the container stops, and the engine removes it (auto-remove).
The normal path removes it explicitly and checks that it is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atoll.core.sandbox import engine_url, raw_socket
from atoll.core.sizes import MiB

ROLLOUT_UID = 10001  # the image's `rollout` user: every tool call runs as it
KEEPER_UID = 10002  # the container's own process: not signallable by the tools
WORKDIR = "/workspace"
LABEL = "atoll.pi.rollout"
OWNER_LABEL = "atoll.pi.owner"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ContainerError(RuntimeError):
    """The engine could not create, run or remove the container; the message says how to fix it."""


@dataclass(frozen=True)
class ContainerLimits:
    memory_bytes: int = 2048 * MiB
    cpus: float = 1.0
    processes: int = 256
    file_size_bytes: int = 256 * MiB
    open_files: int = 1024
    tmp_bytes: int = 256 * MiB

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ExecResult:
    """As Harbor's ExecResult: what the tool target reads."""

    stdout: str | None
    stderr: str | None
    return_code: int


def owner() -> str:
    """The owner label of this process's containers: host and pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def connect(docker_host: str | None = None) -> Any:
    """A client of the engine (the private one unless DOCKER_HOST says otherwise)."""
    import docker
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    url = docker_host or engine_url()
    try:
        client = docker.DockerClient(base_url=url, version="auto", timeout=3600, max_pool_size=32)
        client.ping()
    except (DockerException, RequestException, OSError) as exc:
        raise ContainerError(
            f"no Docker engine answers at {url} ({type(exc).__name__}); start one with "
            "`atoll docker up` and export the DOCKER_HOST it prints"
        ) from exc
    return client


class RolloutContainer:
    """One running rollout container; `exec` has the signature of Harbor's environment exec."""

    def __init__(self, client: Any, container_id: str, lifeline: Any, image_id: str) -> None:
        self.client = client
        self.id = container_id
        self.image_id = image_id
        self._lifeline = lifeline
        self.cleanup: dict[str, Any] | None = None

    @classmethod
    def start(
        cls,
        client: Any,
        image_id: str,
        workspace: Path,
        rollout_id: str,
        limits: ContainerLimits,
    ) -> RolloutContainer:
        from docker.errors import APIError
        from docker.types import LogConfig, Mount, Ulimit
        from requests.exceptions import RequestException

        host_config = client.api.create_host_config(
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=limits.processes,
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            nano_cpus=max(1, int(limits.cpus * 1e9)),
            ulimits=[
                Ulimit(name="fsize", soft=limits.file_size_bytes, hard=limits.file_size_bytes),
                Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
            ],
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,mode=1777,size={limits.tmp_bytes}"},
            mounts=[Mount(WORKDIR, str(workspace), type="bind", read_only=False)],
            init=True,
            auto_remove=True,
            log_config=LogConfig(type="none"),
        )
        container_id: str | None = None
        try:
            container_id = str(
                client.api.create_container(
                    image=image_id,
                    command=["cat"],
                    user=f"{KEEPER_UID}:{KEEPER_UID}",
                    working_dir=WORKDIR,
                    environment={"HOME": "/tmp", "LANG": "C.UTF-8", "PATH": PATH},
                    labels={LABEL: rollout_id, OWNER_LABEL: owner()},
                    stdin_open=True,  # not detached: StdinOnce, so our hang-up is its EOF
                    network_disabled=True,
                    host_config=host_config,
                )["Id"]
            )
            lifeline = client.api.attach_socket(container_id, params={"stdin": 1, "stream": 1})
            client.api.start(container_id)
        except (APIError, RequestException) as exc:
            if container_id is not None:
                with contextlib.suppress(APIError, RequestException):
                    client.api.remove_container(container_id, force=True)
            raise ContainerError(
                f"the engine could not start the rollout container: {exc}"
            ) from exc
        return cls(client, container_id, lifeline, image_id)

    # -- exec ---------------------------------------------------------------

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        """As Harbor's exec; `env` and `timeout_sec` are not used: the tool target bounds
        every command with `timeout` inside the container, and passes no host variables."""
        return await asyncio.to_thread(self.exec_sync, command, cwd, user)

    def exec_sync(
        self, command: str, cwd: str | None = None, user: str | int | None = None
    ) -> ExecResult:
        """`bash -c command` as the rollout user; what it printed and its exit code."""
        from docker.errors import APIError, NotFound
        from requests.exceptions import RequestException

        api = self.client.api
        try:
            created = api.exec_create(
                self.id,
                ["bash", "-c", command],
                user=str(user) if user is not None else f"{ROLLOUT_UID}:{ROLLOUT_UID}",
                workdir=cwd or WORKDIR,
                stdout=True,
                stderr=True,
            )
            stdout, stderr = api.exec_start(created["Id"], demux=True)
            code = api.exec_inspect(created["Id"]).get("ExitCode")
        except NotFound as exc:
            raise ContainerError(f"the rollout container {self.id[:12]} is gone") from exc
        except (APIError, RequestException) as exc:
            raise ContainerError(f"exec in the rollout container failed: {exc}") from exc
        return ExecResult(
            stdout=(stdout or b"").decode("utf-8", "replace"),
            stderr=(stderr or b"").decode("utf-8", "replace"),
            return_code=int(code) if code is not None else -1,
        )

    # -- removal ------------------------------------------------------------

    def remove(self, wait_s: float = 20.0) -> dict[str, Any]:
        """Remove the container and check that it is gone; the outcome, for the record."""
        from docker.errors import APIError, NotFound
        from requests.exceptions import RequestException

        began = time.monotonic()
        outcome, detail = "removed", ""
        with contextlib.suppress(OSError):
            raw_socket(self._lifeline).close()
        try:
            self.client.api.remove_container(self.id, force=True)
        except NotFound:
            outcome = "already gone"
        except (APIError, RequestException) as exc:
            # "removal already in progress": the engine's auto-remove won the race.
            detail = str(getattr(exc, "explanation", exc) or exc)
        gone = False
        while time.monotonic() - began < wait_s:
            try:
                self.client.api.inspect_container(self.id)
            except NotFound:
                gone = True
                break
            except (APIError, RequestException) as exc:
                detail = str(exc)
            time.sleep(0.05)
        if not gone:
            outcome = "failed"
        self.cleanup = {
            "outcome": outcome,
            "verified_gone": gone,
            "detail": detail if not gone else "",
            "seconds": round(time.monotonic() - began, 4),
        }
        return self.cleanup


def resolve_image(client: Any, reference: str) -> dict[str, Any]:
    """The image's ID (a content digest) and labels; an error naming the fix if it is missing."""
    from docker.errors import APIError, ImageNotFound
    from requests.exceptions import RequestException

    try:
        found = client.api.inspect_image(reference)
    except ImageNotFound as exc:
        raise ContainerError(
            f"the rollout image {reference} is not in the engine; build it with "
            "`atoll pi image build`"
        ) from exc
    except (APIError, RequestException) as exc:
        raise ContainerError(f"cannot inspect the rollout image {reference}: {exc}") from exc
    labels = (found.get("Config") or {}).get("Labels") or {}
    return {"id": str(found["Id"]), "labels": dict(labels)}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(client: Any) -> list[str]:
    """Remove rollout containers of this host whose owner process is dead; their ids.

    Only what is provably stale is touched: a container of another host, or of
    a live process (also one reusing a dead owner's pid), is left alone.
    """
    from docker.errors import APIError, NotFound
    from requests.exceptions import RequestException

    host = socket.gethostname()
    removed: list[str] = []
    try:
        found = client.api.containers(all=True, filters={"label": OWNER_LABEL})
    except (APIError, RequestException):
        return removed
    for entry in found:
        label = (entry.get("Labels") or {}).get(OWNER_LABEL, "")
        owner_host, _, pid = label.rpartition(":")
        if owner_host != host or not pid.isdigit() or pid_alive(int(pid)):
            continue
        with contextlib.suppress(NotFound, APIError, RequestException):
            client.api.remove_container(entry["Id"], force=True)
            removed.append(str(entry["Id"]))
    return removed
