"""Harbor's egress-control sidecar image, built offline from `atoll/base:bookworm`.

Harbor's `docker` environment enforces every network policy other than
`public` (`no-network`, `allowlist`, per trial or per phase) through a sidecar
container whose image it builds `FROM` a registry image. This engine cannot
pull, so that build fails and such tasks could not start. We build an image
with the same contract (entrypoint at /opt/egress-sidecar/entrypoint.sh, the
ready file its healthcheck waits for, `network-policy allow-all | deny-all |
allow TARGET...` on the PATH, the initial policy from its environment) from
our own base image, enforcing with nftables, and tag it with the
content-addressed name Harbor computes for its own sidecar. Harbor checks for
that name before building, finds ours, and uses it.

The name is computed with Harbor's own constants and hash function, so a
Harbor upgrade that changes its sidecar changes the name and `atoll docker up`
builds under the new one.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.docker_engine.base_image import image_id
from atoll.core.docker_engine.errors import EngineError
from atoll.core.docker_engine.paths import BASE_IMAGE

CONTEXT_DIR = Path(__file__).parent / "sidecar_image"
# Build-context files and the modes they get in the image.
CONTEXT_FILES = {"Dockerfile": 0o644, "entrypoint.sh": 0o755, "network-policy": 0o755}
FINGERPRINT_LABEL = "org.atoll.egress-sidecar.fingerprint"


class HarborMissing(Exception):
    """Harbor cannot be imported, so there is no sidecar name to build under."""


@dataclass(frozen=True)
class SidecarImage:
    tag: str
    image_id: str
    source: str  # "present" or "built"


def engine_platform(client: Any) -> str:
    """The engine's platform as Harbor's `default_docker_platform` spells it (os/arch)."""
    version = client.version()
    return f"{version['Os']}/{version['Arch']}"


def harbor_image_name(platform: str) -> str:
    """The image name Harbor's docker environment looks for before building its sidecar."""
    try:
        from harbor.environments.docker.docker import DockerEnvironment
        from harbor.environments.docker.utils import _compute_image_name
        from harbor.utils.container_cache import docker_build_context_hash
    except ImportError as exc:
        raise HarborMissing(f"Harbor is not importable ({exc})") from exc
    hash_key = docker_build_context_hash(
        context=DockerEnvironment._EGRESS_CONTROL_SIDECAR_CONTEXT_PATH,
        dockerfile_path=DockerEnvironment._egress_control_sidecar_dockerfile_path(),
        build_args={},
        platform=platform,
    )
    return _compute_image_name(DockerEnvironment._EGRESS_CONTROL_SIDECAR_DOCKER_NAME, hash_key)


def sidecar_tag(client: Any) -> str:
    """The sidecar's name in this engine; `HarborMissing` without Harbor."""
    return harbor_image_name(engine_platform(client))


def present(client: Any) -> bool | None:
    """Whether the engine has the sidecar under Harbor's name; None when Harbor is missing."""
    from docker.errors import ImageNotFound

    try:
        tag = sidecar_tag(client)
    except HarborMissing:
        return None
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def fingerprint(base_id: str) -> str:
    """What the image is built from: our context files and the base image's ID."""
    digest = hashlib.sha256(base_id.encode())
    for name in sorted(CONTEXT_FILES):
        digest.update(b"\0" + name.encode() + b"\0" + (CONTEXT_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def _context_tar() -> io.BytesIO:
    """The build context as a tar with fixed modes (the classic builder has no COPY --chmod)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in CONTEXT_FILES.items():
            data = (CONTEXT_DIR / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def image_fingerprint(client: Any, tag: str) -> str | None:
    """The fingerprint label of `tag`, or None if there is no such image."""
    from docker.errors import ImageNotFound

    try:
        return (client.images.get(tag).labels or {}).get(FINGERPRINT_LABEL)
    except ImageNotFound:
        return None


def ensure_sidecar_image(client: Any) -> SidecarImage:
    """Build the sidecar under Harbor's name unless an image of the same fingerprint is there.

    Raises HarborMissing when Harbor is not importable, EngineError when the
    base image is missing or the build fails.
    """
    tag = sidecar_tag(client)
    base_id = image_id(client, BASE_IMAGE)
    if base_id is None:
        raise EngineError(f"{BASE_IMAGE} is missing; the egress sidecar is built from it")
    wanted = fingerprint(base_id)
    if image_fingerprint(client, tag) == wanted:
        return SidecarImage(tag, str(client.images.get(tag).id), "present")
    from docker.errors import BuildError, DockerException

    try:
        image, _logs = client.images.build(
            fileobj=_context_tar(),
            custom_context=True,
            tag=tag,
            labels={FINGERPRINT_LABEL: wanted},
            network_mode="none",
            pull=False,
            rm=True,
            forcerm=True,
        )
    except BuildError as exc:
        raise EngineError(f"building the egress sidecar {tag} failed: {exc.msg}") from exc
    except DockerException as exc:
        raise EngineError(f"building the egress sidecar {tag} failed: {exc}") from exc
    return SidecarImage(tag, str(image.id), "built")
