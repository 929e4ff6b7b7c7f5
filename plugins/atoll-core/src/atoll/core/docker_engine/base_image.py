"""The offline base image `atoll/base:bookworm`: Debian with python3, numpy, g++ and nftables.

No registry can be reached, so the image is built from Debian packages with
debootstrap (about a minute) and imported. The rootfs tarball is cached in the
state directory, so a fresh engine re-imports it in seconds; the image ID
(a content digest of the image config) is recorded next to it.

The suite and package list form a *recipe* whose short hash names the cached
tarball and is stamped on the image as a label, so changing the package list
rebuilds both instead of reusing an image that lacks a package.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atoll.core.docker_engine.errors import EngineError
from atoll.core.docker_engine.files import tail
from atoll.core.docker_engine.paths import BASE_IMAGE, EnginePaths
from atoll.core.durable import atomic_replace, atomic_write_bytes
from atoll.core.mounts import unmount_below

SUITE = "bookworm"
# nftables: the egress sidecar (egress_sidecar.py) enforces network policies with it.
# python3-numpy: the discovery tasks' candidates and verifier use it, and a trial's image
# is built offline, so it must come with the base.
PACKAGES = ("python3", "g++", "nftables", "python3-numpy")
MIRROR_ENV = "ATOLL_DEBIAN_MIRROR"
RECIPE_LABEL = "org.atoll.base.recipe"


def recipe_key(suite: str = SUITE, packages: tuple[str, ...] = PACKAGES) -> str:
    """`<suite>-<hash>`: names the cached rootfs and labels the image built from it."""
    digest = hashlib.sha256("\0".join((suite, *sorted(packages))).encode()).hexdigest()
    return f"{suite}-{digest[:10]}"


RECIPE = recipe_key()
# What a `docker run atoll/base:bookworm` does with no command, a sane PATH, the recipe.
IMAGE_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["/bin/bash"]',
    f"LABEL {RECIPE_LABEL}={RECIPE}",
)


@dataclass(frozen=True)
class BaseImage:
    tag: str
    image_id: str
    source: str  # "present", "cache" or "debootstrap"
    recipe: str = RECIPE
    packages: tuple[str, ...] = PACKAGES


def tarball(paths: EnginePaths) -> Path:
    """The cached rootfs of the current recipe."""
    return paths.base_tarball(RECIPE)


def image_id(client: Any, tag: str = BASE_IMAGE) -> str | None:
    """The ID (sha256 digest of the config) of `tag` in the engine, or None if missing."""
    from docker.errors import ImageNotFound

    try:
        return str(client.images.get(tag).id)
    except ImageNotFound:
        return None


def image_recipe(client: Any, tag: str = BASE_IMAGE) -> str | None:
    """The recipe label of `tag` (None if missing or imported before recipes were labelled)."""
    from docker.errors import ImageNotFound

    try:
        labels = client.images.get(tag).labels or {}
    except ImageNotFound:
        return None
    return labels.get(RECIPE_LABEL)


def read_record(paths: EnginePaths) -> dict[str, Any] | None:
    try:
        record = json.loads(paths.base_record.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _record(paths: EnginePaths, image: BaseImage) -> None:
    payload = {**asdict(image), "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    data = (json.dumps(payload, indent=2) + "\n").encode()
    atomic_write_bytes(paths.base_record, data, make_parents=True)


def build_tarball(paths: EnginePaths, mirror: str | None = None) -> Path:
    """Debootstrap a minimal bookworm with PACKAGES and cache it as the recipe's tarball."""
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise EngineError(
            "debootstrap is not installed; install it with `apt-get install -y debootstrap`"
        )
    paths.base_dir.mkdir(parents=True, exist_ok=True)
    rootfs = Path(tempfile.mkdtemp(prefix="rootfs.", dir=paths.base_dir))
    argv = [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(rootfs)]
    mirror = mirror or os.environ.get(MIRROR_ENV)
    if mirror:
        argv.append(mirror)
    try:
        with paths.log_file.open("ab") as log:
            offset = log.tell()
            log.write(f"--- atoll: {' '.join(argv)}\n".encode())
            log.flush()
            done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            raise EngineError(
                f"debootstrap failed (status {done.returncode}); check the Debian mirror "
                f"(set {MIRROR_ENV} to use another); {paths.log_file} ends with:\n"
                f"{tail(paths.log_file, since=offset)}"
            )
        try:
            with atomic_replace(tarball(paths), suffix=".tar") as tmp:
                subprocess.run(
                    ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tmp), "."],
                    check=True,
                    capture_output=True,
                )
        except subprocess.CalledProcessError as exc:
            raise EngineError(
                f"packing the base rootfs failed: {exc.stderr.decode(errors='replace').strip()}"
            ) from exc
    finally:
        unmount_below(rootfs)  # what a failed debootstrap left mounted
        shutil.rmtree(rootfs, ignore_errors=True)
    _drop_other_tarballs(paths)
    return tarball(paths)


def _drop_other_tarballs(paths: EnginePaths) -> None:
    """Delete cached rootfs tarballs of older recipes: each is over half a gigabyte."""
    keep = tarball(paths)
    for old in paths.base_dir.glob("*-rootfs.tar"):
        if old != keep:
            old.unlink(missing_ok=True)


def import_tarball(client: Any, tarball: Path, tag: str = BASE_IMAGE) -> str:
    """Import a rootfs tarball as `tag`; the new image's ID."""
    repository, _, name = tag.partition(":")
    client.api.import_image_from_file(
        str(tarball), repository=repository, tag=name or "latest", changes=list(IMAGE_CHANGES)
    )
    found = image_id(client, tag)
    if found is None:
        raise EngineError(f"importing {tarball} did not produce {tag}; see the engine log")
    return found


def ensure_base_image(
    client: Any,
    paths: EnginePaths,
    say: Callable[[str], None] = lambda _msg: None,
    mirror: str | None = None,
) -> BaseImage:
    """Make `atoll/base:bookworm` of the current recipe exist: present, from the cache, or built.

    An image of another recipe (an older package list) is replaced.
    """
    present = image_id(client)
    if present is not None and image_recipe(client) == RECIPE:
        image = BaseImage(BASE_IMAGE, present, "present")
        record = read_record(paths)
        if record is None or record.get("image_id") != present or record.get("recipe") != RECIPE:
            _record(paths, image)
        return image
    if present is not None:
        say(f"{BASE_IMAGE} lacks some of {', '.join(PACKAGES)}; replacing it ...")
    cached = tarball(paths)
    source = "cache"
    if not cached.is_file():
        say(f"building the base rootfs with debootstrap ({SUITE}: {', '.join(PACKAGES)}) ...")
        build_tarball(paths, mirror)
        source = "debootstrap"
    say(f"importing {cached} as {BASE_IMAGE} ...")
    try:
        found = import_tarball(client, cached)
    except EngineError:
        raise
    except Exception as exc:  # the engine's own error, e.g. a damaged tarball
        raise EngineError(
            f"importing {cached} failed ({exc}); delete that file so that the "
            "next `atoll docker up` rebuilds it"
        ) from exc
    image = BaseImage(BASE_IMAGE, found, source)
    _record(paths, image)
    return image
