"""The rollout's fresh workspace on the host: created private, filled with named files only.

The directory is bind-mounted at /workspace in the rollout's container and
owned by the container's `rollout` user. It lives under a private parent
(mode 0700) in the system's temporary directory, named with the owner's pid,
so that a later run can remove one whose owner died (and only such a one).
After the run, its regular files are copied into the rollout's record
directory (never following a link the container may have planted), and it is
deleted.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from atoll.core.sizes import MiB
from atoll.pi.container import ROLLOUT_UID, pid_alive

PREFIX = "atoll-pi-ws-"
ROOT_ENV = "ATOLL_PI_WORKSPACES"
KEEP_FILE_BYTES = MiB
KEEP_TOTAL_BYTES = 16 * MiB


class WorkspaceError(ValueError):
    """A file a caller named cannot go into the workspace; the message names it."""


FileSource = Path | bytes | str


def root() -> Path:
    """Where workspaces are made: `$ATOLL_PI_WORKSPACES`, else the system's temp directory."""
    return Path(os.environ.get(ROOT_ENV) or tempfile.gettempdir())


def check_name(name: str) -> str:
    """A workspace-relative file name: no absolute path, no `..`, no empty part."""
    path = PurePosixPath(name)
    if (
        not name
        or path.is_absolute()
        or any(part in ("..", "") for part in name.split("/"))
        or "\0" in name
    ):
        raise WorkspaceError(
            f"workspace file name {name!r} must be relative, without '..' or empty parts"
        )
    return str(path)


def create(files: Mapping[str, FileSource], base: Path | None = None) -> Path:
    """A fresh workspace holding exactly `files` (name -> host path, bytes or text)."""
    for name in files:
        check_name(name)
    parent = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base or root()))
    workspace = parent / "workspace"
    workspace.mkdir()
    owned = os.geteuid() == 0
    try:
        for name, source in files.items():
            target = workspace / check_name(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, Path):
                if not source.is_file():
                    raise WorkspaceError(f"{source} (for {name}) is not a file")
                shutil.copyfile(source, target)
            else:
                target.write_bytes(source.encode("utf-8") if isinstance(source, str) else source)
        for path in [workspace, *workspace.rglob("*")]:
            if owned:
                os.chown(path, ROLLOUT_UID, ROLLOUT_UID)
            else:  # the container's user must be able to write here
                os.chmod(path, 0o777 if path.is_dir() else 0o666)
        os.chmod(workspace, 0o755 if owned else 0o777)
    except BaseException:
        shutil.rmtree(parent, ignore_errors=True)
        raise
    return workspace


def regular_files(workspace: Path) -> list[tuple[str, Path, int]]:
    """(relative name, path, size) of every regular file, sorted; links are never followed."""
    found = []
    for directory, _dirs, names in os.walk(workspace, followlinks=False):
        for name in names:
            path = Path(directory) / name
            with contextlib.suppress(OSError):
                info = path.lstat()
                if stat.S_ISREG(info.st_mode):
                    found.append((path.relative_to(workspace).as_posix(), path, info.st_size))
    return sorted(found)


def open_regular(path: Path) -> Any:
    """A binary reader of `path`, refusing a link (planted after the listing or not)."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def copy_out(workspace: Path, destination: Path) -> dict[str, Any]:
    """Copy the workspace's regular files (no links followed) into `destination`, within limits."""
    kept, skipped, total = [], [], 0
    for relative, path, size in regular_files(workspace):
        if size > KEEP_FILE_BYTES or total + size > KEEP_TOTAL_BYTES:
            skipped.append(relative)
            continue
        try:
            with open_regular(path) as handle:
                data = handle.read(KEEP_FILE_BYTES + 1)
        except OSError:
            skipped.append(relative)
            continue
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        total += len(data)
        kept.append(relative)
    return {"kept": kept, "skipped": skipped, "bytes": total}


def remove(workspace: Path) -> None:
    shutil.rmtree(workspace.parent, ignore_errors=True)


def sweep_stale(base: Path | None = None) -> list[Path]:
    """Remove workspaces whose owner process is dead (left by a killed run)."""
    removed = []
    pattern = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")
    with contextlib.suppress(OSError):
        for entry in (base or root()).iterdir():
            match = pattern.match(entry.name)
            if match and entry.is_dir() and not pid_alive(int(match.group(1))):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed
