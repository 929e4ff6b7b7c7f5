"""The Docker backend: one throw-away container per run, pinned to an image ID.

For tasks that need a whole system image (a toolchain, a task's own
Dockerfile) rather than the host's. Each run is a fresh container with no
network, a read-only root, no capabilities, no privilege gain, cgroup limits
for memory and processes, rlimits for CPU, file size and open files, and only
the spec's mounts. The image reference is resolved to its ID before the run,
so a tag moved meanwhile cannot change what runs. Every container carries the
label `atoll.sandbox=1` and is removed afterwards, on error and on Ctrl-C too.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atoll.core.docker_engine.paths import BASE_IMAGE, EnginePaths
from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.classify import Why, classify, split_exit_code
from atoll.core.sandbox.docker_cgroup import ContainerCgroup
from atoll.core.sandbox.docker_cgroup import leftovers as cgroup_leftovers
from atoll.core.sandbox.docker_stream import AttachedStreams, raw_socket
from atoll.core.sandbox.seekable_stdin import stdin_file
from atoll.core.sandbox.spec import (
    Limits,
    Network,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    mount_target,
)
from atoll.core.sizes import KiB

LABEL = "atoll.sandbox"
# Which process made a container, so that one process can audit its own leftovers.
OWNER_LABEL = "atoll.sandbox.owner"
DEFAULT_IMAGE = BASE_IMAGE
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
SYSTEM_DOCKER_HOST = "unix:///var/run/docker.sock"
# docker-init (pid 1, so that signals reach the program as on a host) is one more process.
_INIT_PROCESSES = 1
_POLL_S = 0.05
# Where a seekable stdin's file is bound in the container, to be opened as descriptor 0.
STDIN_TARGET = "/.atoll-stdin"


def engine_url() -> str:
    """`$DOCKER_HOST`, else the private engine's socket if it exists, else the system one."""
    explicit = os.environ.get("DOCKER_HOST")
    if explicit:
        return explicit
    with contextlib.suppress(Exception):
        private = EnginePaths.from_options()
        if private.socket.exists():
            return private.docker_host
    return SYSTEM_DOCKER_HOST


def _api_message(exc: Exception) -> str:
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc).strip()


class DockerBackend(SandboxBackend):
    """Runs each command in a fresh, locked-down container of a digest-pinned image."""

    name = "docker"

    def __init__(self, base_url: str | None = None) -> None:
        self._base_url = base_url
        self._client: Any = None
        self._url = ""
        self._local_cgroupfs = False
        self._lock = threading.Lock()

    # -- engine ---------------------------------------------------------------

    def _connect(self) -> Any:
        with self._lock:
            if self._client is not None:
                return self._client
            import docker
            from docker.errors import DockerException
            from requests.exceptions import RequestException

            url = self._base_url or engine_url()
            try:
                client = docker.DockerClient(
                    base_url=url, version="auto", timeout=120, max_pool_size=64
                )
                info = client.info()
            except (DockerException, RequestException, OSError) as exc:
                raise SandboxError(
                    f"no Docker engine answers at {url} ({type(exc).__name__}); start one with "
                    "`atoll docker up` and export the DOCKER_HOST it prints"
                ) from exc
            self._local_cgroupfs = url.startswith("unix://") and info.get("CgroupDriver") == (
                "cgroupfs"
            )
            self._client, self._url = client, url
            return client

    def check(self) -> None:
        from docker.errors import DockerException
        from requests.exceptions import RequestException

        client = self._connect()
        try:
            client.ping()
        except (DockerException, RequestException, OSError) as exc:
            raise SandboxError(
                f"the Docker engine at {self._url} stopped answering ({type(exc).__name__}); "
                "restart it with `atoll docker up`"
            ) from exc
        self.resolve_image(DEFAULT_IMAGE)

    def resolve_image(self, reference: str) -> str:
        """The image ID (`sha256:...`, a digest of its config) that `reference` names now."""
        from docker.errors import APIError, ImageNotFound
        from requests.exceptions import RequestException

        client = self._connect()
        try:
            return str(client.api.inspect_image(reference)["Id"])
        except ImageNotFound as exc:
            fix = (
                "run `atoll docker up` to import it"
                if reference == DEFAULT_IMAGE
                else "build or load it into that engine first"
            )
            raise SandboxError(
                f"image {reference} is not in the Docker engine at {self._url}; {fix}"
            ) from exc
        except (APIError, RequestException) as exc:
            raise SandboxError(f"cannot inspect image {reference}: {_api_message(exc)}") from exc

    def leftovers(self, everyone: bool = False) -> list[str]:
        """This process's sandbox containers (IDs) and per-run cgroups that still exist.

        With `everyone`, the sandbox containers of every process using this engine.
        """
        client = self._connect()
        label = f"{LABEL}=1" if everyone else f"{OWNER_LABEL}={owner()}"
        found = client.api.containers(all=True, filters={"label": label}, quiet=True)
        containers = [str(entry["Id"]) for entry in found]
        return containers if everyone else containers + [str(g) for g in cgroup_leftovers()]

    # -- one run --------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None = None,
        *,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        if pipes is not None:
            pipes.close()
            raise SandboxError(
                "the docker sandbox backend cannot join a program to host pipes "
                "(interactive judging); use the bwrap backend"
            )
        _validate(argv, spec)
        client = self._connect()
        image = self.resolve_image(spec.image or DEFAULT_IMAGE)
        if not spec.stdin_seekable:
            return self._run(client, argv, spec, image, stdin, None, cancel)
        with stdin_file(stdin or b"") as path:
            return self._run(client, argv, spec, image, None, path, cancel)

    def _run(
        self,
        client: Any,
        argv: Sequence[str],
        spec: SandboxSpec,
        image: str,
        stdin: bytes | None,
        stdin_path: Path | None,
        cancel: CancelToken | None,
    ) -> SandboxResult:
        """One container: `stdin` bytes through the attach connection, or `stdin_path` bound in."""
        from docker.errors import APIError
        from requests.exceptions import RequestException

        group = ContainerCgroup.create(self._local_cgroupfs)
        limits = spec.limits
        container_id: str | None = None
        streams: AttachedStreams | None = None
        try:
            try:
                config = _container_config(client, argv, spec, image, group, stdin, stdin_path)
                container_id = str(client.api.create_container(**config)["Id"])
                params = {"stdin": int(stdin is not None), "stdout": 1, "stderr": 1, "stream": 1}
                streams = AttachedStreams(
                    raw_socket(client.api.attach_socket(container_id, params=params)),
                    limits.stdout_bytes,
                    limits.stderr_bytes,
                )
                client.api.start(container_id)
                started = time.monotonic()
                streams.send_stdin(stdin)
                killed_for = self._watch(
                    client, container_id, streams, limits, group, started, cancel
                )
                wall = time.monotonic() - started
                state = client.api.inspect_container(container_id)["State"]
            except (APIError, RequestException) as exc:
                raise SandboxError(
                    f"the Docker engine at {self._url} failed the run: {_api_message(exc)}"
                ) from exc
            cpu = group.cpu_seconds() if group is not None else None
            peak = group.peak_memory() if group is not None else None
        finally:
            if streams is not None:
                streams.close()
            if container_id is not None:
                _remove(client, container_id)
            if group is not None:
                try:
                    group.remove()
                except OSError as exc:
                    raise SandboxError(str(exc)) from exc
        return _result(state, killed_for, limits, wall, cpu, peak, streams)

    def _watch(
        self,
        client: Any,
        container_id: str,
        streams: AttachedStreams,
        limits: Limits,
        group: ContainerCgroup | None,
        started: float,
        cancel: CancelToken | None,
    ) -> str | None:
        """Follow the run until it exits; kill it at a limit and say which."""
        from requests.exceptions import RequestException

        deadline = None if limits.wall_seconds is None else started + limits.wall_seconds
        while True:
            why = None
            if cancel is not None and cancel.cancelled:
                why = Why.CANCELLED
            elif deadline is not None and time.monotonic() >= deadline:
                why = Why.WALL
            elif streams.overflowed:
                why = Why.OUTPUT
            elif (
                group is not None
                and limits.cpu_seconds is not None
                and (group.cpu_seconds() or 0.0) >= limits.cpu_seconds
            ):
                why = Why.CPU
            if why is not None:
                # The engine finishes a kill only once the output in flight is read.
                killer = threading.Thread(target=_kill, args=(client, container_id), daemon=True)
                killer.start()
                streams.drain(timeout=10.0)
                killer.join(timeout=30.0)
                return why
            left = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if not streams.closed:
                streams.pump(left)
                continue
            # Output is closed; the program may still run (a silent sleeper).
            try:
                client.api.wait(container_id, timeout=max(left, 0.01) * 4)
            except RequestException:
                continue
            return None


def owner() -> str:
    """The value of OWNER_LABEL on the containers this process starts."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _validate(argv: Sequence[str], spec: SandboxSpec) -> None:
    if not argv:
        raise SandboxError("nothing to run: the command is empty")
    if spec.uid == 0 or spec.gid == 0:
        raise SandboxError("sandboxed programs never run as root: give the spec a non-zero uid")
    if spec.user_namespace is not None:
        raise SandboxError(
            "the docker backend runs in the engine's own namespaces, not a given one"
        )
    for key in spec.env:
        if not key or "=" in key or "\0" in key:
            raise SandboxError(f"invalid environment variable name: {key!r}")
    for mount in spec.mounts:
        if not mount.source.exists():
            raise SandboxError(f"mount source {mount.source} does not exist")
        target = mount_target(mount.target)
        if spec.stdin_seekable and target == STDIN_TARGET:
            raise SandboxError(f"{STDIN_TARGET} is where the docker backend binds a seekable stdin")


def _container_config(
    client: Any,
    argv: Sequence[str],
    spec: SandboxSpec,
    image: str,
    group: ContainerCgroup | None,
    stdin: bytes | None,
    stdin_path: Path | None,
) -> dict[str, Any]:
    from docker.types import LogConfig, Mount, Ulimit

    limits = spec.limits
    ulimits = []
    if limits.cpu_seconds is not None:
        # With a measured cgroup the watcher stops the run at the limit on the whole
        # tree's CPU time; the rlimit (which counts per process, and in some VMs fires
        # early against the cgroup's clock) is then only a backstop one second later.
        soft = max(1, math.ceil(limits.cpu_seconds)) + (1 if group is not None else 0)
        ulimits.append(Ulimit(name="cpu", soft=soft, hard=soft + 1))
    if limits.file_size_bytes is not None:
        ulimits.append(
            Ulimit(name="fsize", soft=limits.file_size_bytes, hard=limits.file_size_bytes)
        )
    if limits.open_files is not None:
        ulimits.append(Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files))
    if limits.stack_bytes is not None:
        ulimits.append(Ulimit(name="stack", soft=limits.stack_bytes, hard=limits.stack_bytes))
    tmpfs = "rw,exec,nosuid,nodev,mode=1777"
    if limits.memory_bytes is not None:
        tmpfs += f",size={limits.memory_bytes}"
    host_config = client.api.create_host_config(
        network_mode="host" if spec.network is Network.HOST else "none",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=None if limits.processes is None else limits.processes + _INIT_PROCESSES,
        mem_limit=limits.memory_bytes,
        nano_cpus=None if limits.cpus is None else max(1, int(limits.cpus * 1e9)),
        memswap_limit=limits.memory_bytes,
        ulimits=ulimits,
        tmpfs={"/tmp": tmpfs},
        mounts=[
            Mount(m.target, str(m.source.resolve()), type="bind", read_only=not m.writable)
            for m in spec.mounts
        ]
        + (
            []
            if stdin_path is None
            else [Mount(STDIN_TARGET, str(stdin_path), type="bind", read_only=True)]
        ),
        init=True,
        log_config=LogConfig(type="none"),
        cgroup_parent=group.parent if group is not None else None,
    )
    return {
        "image": image,
        **_entrypoint(argv, limits, stdin_path is not None),
        "user": f"{spec.uid}:{spec.gid}",
        "environment": {"PATH": DEFAULT_PATH, **spec.env},
        "working_dir": spec.workdir,
        "labels": {LABEL: "1", OWNER_LABEL: owner()},
        "stdin_open": stdin is not None,  # with attach (detach=False) this closes stdin at our EOF
        "host_config": host_config,
    }


def _entrypoint(argv: Sequence[str], limits: Limits, seekable_stdin: bool) -> dict[str, list[str]]:
    """The container's command; what the engine cannot set is set inside the container first.

    The engine's own `as` ulimit would apply to the container runtime too, which
    cannot start under it; and the engine gives stdin only as a stream. So the
    image's shell sets RLIMIT_AS, opens the bound stdin file as descriptor 0
    (read-only), and becomes the program.
    """
    steps = []
    if seekable_stdin:
        steps.append(f"exec 0<{STDIN_TARGET}")
    if limits.address_space_bytes is not None:
        steps.append(f"ulimit -v {max(1, limits.address_space_bytes // KiB)}")
    if not steps:
        return {"entrypoint": [argv[0]], "command": list(argv[1:])}
    script = " && ".join([*steps, 'exec "$@"'])
    return {"entrypoint": ["/bin/sh", "-c", script, "sandbox"], "command": list(argv)}


def _kill(client: Any, container_id: str) -> None:
    from docker.errors import APIError

    with contextlib.suppress(APIError):
        client.api.kill(container_id)


def _remove(client: Any, container_id: str) -> None:
    """Remove the container whatever happened (also while a KeyboardInterrupt unwinds)."""
    from docker.errors import APIError, NotFound
    from requests.exceptions import RequestException

    attempts = 3
    for attempt in range(1, attempts + 1):
        try:
            client.api.remove_container(container_id, force=True)
            return
        except NotFound:
            return
        except (APIError, RequestException) as exc:
            if attempt == attempts:
                raise SandboxError(
                    f"sandbox container {container_id[:12]} could not be removed "
                    f"({_api_message(exc)}); remove it with `docker rm -f {container_id[:12]}`"
                ) from exc
            time.sleep(0.2)


def _result(
    state: dict[str, Any],
    killed_for: str | None,
    limits: Limits,
    wall: float,
    cpu: float | None,
    peak: int | None,
    streams: AttachedStreams | None,
) -> SandboxResult:
    assert streams is not None
    # docker-init reports a program killed by signal N as exit code 128+N.
    exit_code, sig = split_exit_code(int(state.get("ExitCode", -1)))
    near_memory = (
        limits.memory_bytes is not None and peak is not None and peak >= 0.9 * limits.memory_bytes
    )
    status = classify(
        limits=limits,
        killed_for=killed_for,
        exit_code=exit_code,
        sig=sig,
        cpu=cpu,
        oom_killed=bool(state.get("OOMKilled")),
        memory_pressure=near_memory,
    )
    return SandboxResult(
        status=status,
        exit_code=exit_code,
        signal=sig,
        cpu_seconds=cpu or 0.0,
        wall_seconds=wall,
        peak_memory_bytes=peak or 0,
        stdout=bytes(streams.stdout.data),
        stderr=bytes(streams.stderr.data),
        stdout_truncated=streams.stdout.truncated,
        stderr_truncated=streams.stderr.truncated,
    )
