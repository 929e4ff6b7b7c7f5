"""The rollout image: `atoll/base:bookworm` with Node.js and the `rollout` user, built offline.

The only image source is atoll's own base image (no registry pull works on
our machines); Node.js comes from Debian's packages, installed during the
build (the build alone gets the host's network, to reach the Debian mirror;
the containers made from the image have none). The versions of the runtimes
are measured in the built image and stamped on it as labels, with the
languages it lacks (Julia: no registry atoll reaches offers it), and the
recipe hash (Dockerfile and base image ID), so a changed recipe rebuilds.
Rollouts refer to the image by its ID, a digest of its content.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from atoll.core import run_lock
from atoll.core.docker_engine import BASE_IMAGE, MIRROR_ENV, image_id
from atoll.pi.container import ContainerError, resolve_image

TAG = "atoll/pi-rollout:bookworm"
RECIPE_LABEL = "org.atoll.pi.image.recipe"
RUNTIMES_LABEL = "org.atoll.pi.image.runtimes"
LACKS_LABEL = "org.atoll.pi.image.lacks"
USER_LABEL = "org.atoll.pi.image.user"
# Languages a rollout may ask for, and the command that runs each.
LANGUAGES = {"python": "python3", "javascript": "node", "julia": "julia"}
NAMES = {"python": "Python", "javascript": "Node.js", "julia": "Julia"}
# Not installable from the registries atoll reaches (no Debian package, no usable PyPI/npm one).
LACKS = ("julia",)
_PROBE = "python3 -c 'import platform; print(platform.python_version())'; node --version"


@dataclass(frozen=True)
class RolloutImage:
    tag: str
    image_id: str
    runtimes: dict[str, str]  # language -> version
    lacks: tuple[str, ...]
    recipe: str
    source: str = "present"  # or "built"

    def to_json(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "image_id": self.image_id,
            "runtimes": self.runtimes,
            "lacks": list(self.lacks),
            "recipe": self.recipe,
        }


def dockerfile() -> bytes:
    return resources.files("atoll.pi.image").joinpath("Dockerfile").read_bytes()


def recipe(base_id: str) -> str:
    return hashlib.sha256(dockerfile() + b"\0" + base_id.encode()).hexdigest()[:16]


def describe(client: Any, reference: str = TAG) -> RolloutImage:
    """The image `reference` names now, with what its labels say it has and lacks."""
    found = resolve_image(client, reference)
    labels = found["labels"]
    if RUNTIMES_LABEL not in labels:
        raise ContainerError(
            f"{reference} is not a rollout image built by `atoll pi image build` (no runtime labels)"
        )
    return RolloutImage(
        tag=reference,
        image_id=found["id"],
        runtimes=json.loads(labels[RUNTIMES_LABEL]),
        lacks=tuple(filter(None, labels.get(LACKS_LABEL, "").split(","))),
        recipe=labels.get(RECIPE_LABEL, ""),
    )


def _context(dockerfile_bytes: bytes) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile_bytes)
        tar.addfile(info, io.BytesIO(dockerfile_bytes))
    buffer.seek(0)
    return buffer


def _build(client: Any, context: io.BytesIO, **options: Any) -> str:
    from docker.errors import APIError, BuildError

    try:
        image, _logs = client.images.build(
            fileobj=context, custom_context=True, pull=False, rm=True, forcerm=True, **options
        )
    except BuildError as exc:
        tail = " | ".join(
            str(line.get("stream", "")).strip() for line in list(exc.build_log)[-6:] if line
        )
        raise ContainerError(f"building the rollout image failed: {exc.msg} {tail}") from exc
    except APIError as exc:
        raise ContainerError(f"building the rollout image failed: {exc}") from exc
    return str(image.id)


def _probe(client: Any, image: str) -> dict[str, str]:
    """The runtime versions inside `image`."""
    output = client.containers.run(
        image, ["sh", "-c", _PROBE], network_disabled=True, remove=True, user="10001:10001"
    )
    python, node = output.decode().split()
    return {"python": python, "javascript": node.lstrip("v")}


def ensure(
    client: Any,
    say: Callable[[str], None] = lambda _line: None,
    *,
    mirror: str | None = None,
    force: bool = False,
) -> RolloutImage:
    """The rollout image of the current recipe: present, or built now (about 10 s).

    One build at a time on this machine (a file lock), so concurrent first
    rollouts build it once; a wait past 30 minutes is refused, naming the
    process that holds the build.
    """
    from atoll.pi.install import cache_root

    lock = cache_root() / ".image-build.lock"
    with run_lock.wait(lock, timeout=1800, what=f"{TAG}'s build", error=ContainerError):
        return _ensure(client, say, mirror=mirror, force=force)


def _ensure(
    client: Any, say: Callable[[str], None], *, mirror: str | None, force: bool
) -> RolloutImage:
    import os

    base_id = image_id(client, BASE_IMAGE)
    if base_id is None:
        raise ContainerError(f"{BASE_IMAGE} is missing; `atoll docker up` builds it")
    wanted = recipe(base_id)
    try:
        present = describe(client)
    except ContainerError:
        present = None
    if present is not None and present.recipe == wanted and not force:
        return present
    say(f"building {TAG} from {BASE_IMAGE} (Node.js and curl from Debian; about 10 s) ...")
    mirror = mirror or os.environ.get(MIRROR_ENV) or ""
    stage = _build(
        client,
        _context(dockerfile()),
        network_mode="host",  # apt reaches the Debian mirror; nothing else does
        buildargs={"DEBIAN_MIRROR": mirror},
    )
    runtimes = _probe(client, stage)
    labels = {
        RECIPE_LABEL: wanted,
        RUNTIMES_LABEL: json.dumps(runtimes, sort_keys=True),
        LACKS_LABEL: ",".join(LACKS),
        USER_LABEL: "rollout:10001",
    }
    final = f"FROM {stage}\n".encode()
    _build(client, _context(final), tag=TAG, labels=labels, network_mode="none")
    built = describe(client)
    if present is not None and present.image_id != built.image_id:
        _drop(client, present.image_id)
    return RolloutImage(
        built.tag, built.image_id, built.runtimes, built.lacks, built.recipe, source="built"
    )


def _drop(client: Any, image_id: str) -> None:
    """Remove the rollout image this build replaced, unless a container still uses it."""
    from docker.errors import APIError

    with contextlib.suppress(APIError):
        client.images.remove(image_id, force=False)
