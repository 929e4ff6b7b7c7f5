"""The standalone rollout API: one prompt, one fresh workspace, one hardened container, one record.

    from atoll.pi.rollout import RolloutRequest, run
    record = run(RolloutRequest(prompt=..., settings=PiSettings(...), run_dir=Path("rollouts/p1-py-0"),
                                language="python", files={"data.txt": Path("data.txt")}))
    record.outcome, record.scorable, record.disqualified, record.commands, record.final_text

Each rollout gets a new temporary workspace holding only the files the caller
names, and a new container of the rollout image (referred to by its ID, a
digest) with that workspace at /workspace. Pi runs on the host; its tools
run in the container through the bridge. The container starts while Pi
starts. Whatever happens (success, failure, a limit, an exception, Ctrl-C)
the container is removed and checked gone, the workspace's files are copied
into `run_dir/workspace/` and the workspace deleted, and `run_dir/record.json`
is written. A language the image lacks (Julia) is refused before anything
starts, with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.core.sizes import MiB
from atoll.pi import image as rollout_image
from atoll.pi import install, workspace
from atoll.pi.container import (
    WORKDIR,
    ContainerError,
    ContainerLimits,
    RolloutContainer,
    connect,
    sweep_stale,
)
from atoll.pi.install import PI_VERSION, PiUnavailable, lock_sha256
from atoll.pi.record import RECORD_FILE, RolloutRecord, from_session, now
from atoll.pi.session import TOOLS, SessionRequest, extension_sha256, run_session
from atoll.pi.settings import PiSettings, SettingsError
from atoll.pi.settings import build as build_settings

# The public rollout API: what a user of Pi rollouts (atoll-euler, a trainer) may import.
# Everything else in atoll.pi is internal and may change without notice.
__all__ = [
    "DEFAULT_IMAGE",
    "PI_VERSION",
    "TOOLS",
    "ContainerError",
    "PiSettings",
    "PiUnavailable",
    "RolloutRecord",
    "RolloutRefused",
    "RolloutRequest",
    "SettingsError",
    "arun",
    "build_settings",
    "connect",
    "describe_image",
    "ensure_image",
    "ensure_pi",
    "extension_sha256",
    "lock_sha256",
    "run",
]

DEFAULT_IMAGE = rollout_image.TAG


def describe_image(client: Any, reference: str = DEFAULT_IMAGE) -> dict[str, Any]:
    """The rollout image `reference` names, as JSON: its ID (a digest), runtimes, what it lacks."""
    return rollout_image.describe(client, reference).to_json()


def ensure_image(client: Any, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The current rollout image, built first if missing or stale, as `describe_image` gives it."""
    return rollout_image.ensure(client, say or _to_stderr).to_json()


def ensure_pi(say: Callable[[str], None] | None = None) -> None:
    """Pi's pinned install, made on first use (`say` gets its progress lines)."""
    install.ensure(say or _to_stderr)


class RolloutRefused(ValueError):
    """The rollout cannot be run as asked (a language the image lacks, a bad file name ...)."""


@dataclass(frozen=True)
class RolloutRequest:
    """What one rollout is: the caller's whole input."""

    prompt: str
    settings: PiSettings
    run_dir: Path  # where the record, events and the workspace copy go; must hold no record yet
    language: str | None = None  # "python", "javascript" or "julia"; None: no runtime asked for
    files: Mapping[str, Path | bytes | str] = field(
        default_factory=dict
    )  # workspace name -> source
    rollout_id: str | None = None
    image: str = rollout_image.TAG  # a tag or an image ID; the record keeps the ID
    limits: ContainerLimits = field(default_factory=ContainerLimits)
    metadata: Mapping[str, Any] = field(default_factory=dict)  # the caller's, kept in the record


def run(
    request: RolloutRequest,
    *,
    docker_host: str | None = None,
    environ: Mapping[str, str] | None = None,
    say: Callable[[str], None] | None = None,
) -> RolloutRecord:
    """Run one rollout to its end and return its record (also in `run_dir/record.json`).

    `say` gets progress lines (Pi's install on first use); default: stderr.
    """
    return asyncio.run(arun(request, docker_host=docker_host, environ=environ, say=say))


async def arun(
    request: RolloutRequest,
    *,
    docker_host: str | None = None,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
    say: Callable[[str], None] | None = None,
) -> RolloutRecord:
    """As `run`, in a running event loop."""
    environ = os.environ if environ is None else environ
    say = say or _to_stderr
    began = time.monotonic()
    created_at = now()
    rollout_id = request.rollout_id or uuid.uuid4().hex[:12]
    run_dir = request.run_dir.absolute()
    if (run_dir / RECORD_FILE).exists():
        raise RolloutRefused(f"{run_dir} already holds a rollout record; give each rollout its own")
    request.settings.api_key(environ)  # a missing key stops here, before anything starts
    for name in request.files:
        workspace.check_name(name)
    client = client or await asyncio.to_thread(connect, docker_host)
    image = await asyncio.to_thread(rollout_image.describe, client, request.image)
    language = _check_language(request.language, image)
    pi = await asyncio.to_thread(install.ensure, say)
    await asyncio.to_thread(sweep_stale, client)
    await asyncio.to_thread(workspace.sweep_stale)
    run_dir.mkdir(parents=True, exist_ok=True)
    files_in = _describe_inputs(request.files)
    host_workspace = await asyncio.to_thread(workspace.create, request.files)
    timings: dict[str, float] = {"prepare_s": round(time.monotonic() - began, 4)}
    starting = asyncio.ensure_future(
        asyncio.to_thread(
            _start_container, client, image.image_id, host_workspace, rollout_id, request.limits
        )
    )
    container: RolloutContainer | None = None
    container_error: str | None = None
    record: RolloutRecord | None = None
    try:
        session = await run_session(
            SessionRequest(request.settings, request.prompt, run_dir, rollout_id, WORKDIR),
            _Deferred(starting),
            pi,
            environ=environ,
        )
        record = from_session(
            session,
            rollout_id=rollout_id,
            prompt=request.prompt,
            pi=pi,
            created_at=created_at,
            language=language,
            metadata=dict(request.metadata),
        )
    finally:
        container, container_error, started_s = await _settle(starting)
        teardown = time.monotonic()
        cleanup = (
            await asyncio.shield(asyncio.to_thread(container.remove))
            if container is not None
            else None
        )
        files_out = await asyncio.to_thread(_collect, host_workspace, run_dir)
        timings["teardown_s"] = round(time.monotonic() - teardown, 4)
    assert record is not None
    if container_error is not None and record.error is None:
        record.outcome, record.scorable, record.error = "error", False, container_error
    if cleanup is not None and not cleanup["verified_gone"] and record.error is None:
        record.outcome, record.scorable = "error", False
        record.error = f"the rollout container {container.id[:12]} could not be removed"  # type: ignore[union-attr]
    timings["container_start_s"] = started_s
    timings.update(record.timings)
    timings["total_s"] = round(time.monotonic() - began, 4)
    record.timings = timings
    record.files_in = files_in
    record.workspace_files, record.workspace_copy = files_out
    record.container = {
        "id": None if container is None else container.id,
        "image": request.image,
        "image_id": image.image_id,
        "runtimes": image.runtimes,
        "lacks": list(image.lacks),
        "user": "rollout (uid 10001)",
        "workdir": WORKDIR,
        "network": "none",
        "read_only_root": True,
        "capabilities": "all dropped",
        "no_new_privileges": True,
        "limits": request.limits.to_json(),
        "cleanup": cleanup,
    }
    record.write(run_dir)
    return record


def _to_stderr(line: str) -> None:
    """The default progress output (Pi's one-time install): one line on stderr."""
    print(line, file=sys.stderr, flush=True)


def _check_language(language: str | None, image: rollout_image.RolloutImage) -> str | None:
    if language is None:
        return None
    if language not in rollout_image.LANGUAGES:
        known = ", ".join(rollout_image.LANGUAGES)
        raise RolloutRefused(f"unknown language {language!r}; known: {known}")
    if language in image.lacks or language not in image.runtimes:
        raise RolloutRefused(
            f"the rollout image {image.image_id[:19]} lacks {rollout_image.NAMES[language]}: "
            "no registry atoll installs from offers it, so this rollout is refused"
        )
    return language


def _start_container(
    client: Any, image_id: str, host_workspace: Path, rollout_id: str, limits: ContainerLimits
) -> tuple[RolloutContainer, float]:
    began = time.monotonic()
    container = RolloutContainer.start(client, image_id, host_workspace, rollout_id, limits)
    return container, round(time.monotonic() - began, 4)


class _Deferred:
    """The container as an exec target before it has started: the first exec waits for it."""

    def __init__(self, starting: asyncio.Future[tuple[RolloutContainer, float]]) -> None:
        self._starting = starting

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> Any:
        container, _ = await asyncio.shield(self._starting)
        return await container.exec(command, cwd, env, timeout_sec, user)


async def _settle(
    starting: asyncio.Future[tuple[RolloutContainer, float]],
) -> tuple[RolloutContainer | None, str | None, float]:
    """The started container (or why it did not start), waiting even when cancelled."""
    while not starting.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(starting)
    try:
        container, seconds = starting.result()
    except ContainerError as exc:
        return None, str(exc), 0.0
    return container, None, seconds


def _describe_inputs(files: Mapping[str, Path | bytes | str]) -> list[dict[str, Any]]:
    described = []
    for name, source in sorted(files.items()):
        if isinstance(source, Path):
            data = source.read_bytes()
        else:
            data = source.encode("utf-8") if isinstance(source, str) else source
        described.append(
            {"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
    return described


def _collect(host_workspace: Path, run_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The workspace's final files (listed and hashed without following links), copied, then deleted."""
    try:
        listing = []
        for relative, path, size in workspace.regular_files(host_workspace):
            digest = hashlib.sha256()
            with contextlib.suppress(OSError), workspace.open_regular(path) as handle:
                for chunk in iter(functools.partial(handle.read, MiB), b""):
                    digest.update(chunk)
            listing.append({"path": relative, "bytes": size, "sha256": digest.hexdigest()})
        copied = workspace.copy_out(host_workspace, run_dir / "workspace")
    finally:
        workspace.remove(host_workspace)
    return listing, copied
