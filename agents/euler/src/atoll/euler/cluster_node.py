"""What a cluster node runs for the driver: its preflight, and one rollout.

These run inside Ray tasks on nodes that advertise the `atoll_docker`
resource, but import nothing of Ray themselves (the driver wraps them). A
rollout is the very `atoll.pi.rollout.arun` a local run calls, into a
directory of the node's own, packed back to the driver whole: the record,
container receipt, cleanup outcome and audit are the ones that function
wrote. The model's key is read from the node's own environment (the
variable that `api_key_env` names), so it never travels in a task's
arguments; Docker is the node's own engine (its DOCKER_HOST).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.euler import run_archive


@dataclass(frozen=True)
class RemoteRollout:
    """A rollout as the driver sends it: no host path, no secret, only what the node needs."""

    prompt: str
    settings: Any  # atoll.pi.settings.PiSettings, its system prompt carried as text instead
    system_prompt: str | None
    language: str | None
    files: dict[str, bytes | str]
    image: str
    metadata: dict[str, Any] = field(default_factory=dict)


def whereabouts() -> dict[str, str]:
    """Which node this is: Ray's node id and the host's name (for rows and error lines)."""
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname()}


def preflight(settings: Any, image: str | None) -> dict[str, Any]:
    """The node's key, engine, image and Pi, checked as a local run checks them; never raises."""
    from atoll.pi.rollout import (
        ContainerError,
        PiUnavailable,
        SettingsError,
        connect,
        describe_image,
        ensure_image,
        ensure_pi,
    )

    where = whereabouts()
    try:
        settings.api_key()
        client = connect(None)
        described = describe_image(client, image) if image else ensure_image(client, _log)
        ensure_pi(_log)
    except (SettingsError, ContainerError, PiUnavailable) as exc:
        return {**where, "error": str(exc)}
    return {**where, "error": None, "image": described}


def rollout(job: RemoteRollout) -> Iterator[dict[str, Any]]:
    """Say where it runs first (so a lost node is known), then the packed rollout or its failure.

    The outcome is one of: `archive` (the rollout directory, packed), `refused`
    (the request cannot run, as `RolloutRefused` says locally) or `error` (the
    engine, Pi or the workspace failed: the line a local run would record).
    """
    yield whereabouts()
    scratch = Path(tempfile.mkdtemp(prefix="atoll-euler-node-"))
    try:
        yield _run(job, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(job: RemoteRollout, scratch: Path) -> dict[str, Any]:
    from atoll.pi import rollout as pi_rollout
    from atoll.pi.rollout import RolloutRefused, RolloutRequest

    settings = job.settings
    if job.system_prompt is not None:
        prompt_file = scratch / "system-prompt.md"
        prompt_file.write_text(job.system_prompt, "utf-8")
        settings = settings.model_copy(update={"system_prompt": prompt_file})
    run_dir = scratch / "run"
    request = RolloutRequest(
        prompt=job.prompt,
        settings=settings,
        run_dir=run_dir,
        language=job.language,
        files=dict(job.files),
        image=job.image,
        metadata=dict(job.metadata),
    )
    try:
        asyncio.run(pi_rollout.arun(request, say=_log))
    except RolloutRefused as exc:
        return {"refused": str(exc)}
    except Exception as exc:  # the engine, Pi or the workspace failed: infrastructure
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"archive": run_archive.pack(run_dir)}


def _log(line: str) -> None:
    """Progress lines (Pi's install, the image's build) go to the node's own log."""
    print(line, file=sys.stderr, flush=True)
