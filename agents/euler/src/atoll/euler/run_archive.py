"""A rollout directory as bytes: how a rollout run on a cluster node comes back to the driver.

The node runs the rollout into a directory of its own (the record, Pi's
events, the bridge's log, the workspace copy), packs it, and the driver
unpacks it where a local rollout would have written it. Unpacking goes into a
hidden directory beside the target, renamed into place only when complete,
so a driver killed mid-way never leaves a half-written rollout directory
that a resumed run would take for a finished one.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import uuid
from pathlib import Path

from atoll.core.durable import fsync_dir


class ArchiveError(Exception):
    """A packed rollout directory that cannot be unpacked; the message says why."""


def pack(run_dir: Path) -> bytes:
    """The directory's regular files, directories and links, as an uncompressed tar."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(run_dir.rglob("*")):
            if path.is_symlink() or path.is_file() or path.is_dir():
                archive.add(path, arcname=path.relative_to(run_dir).as_posix(), recursive=False)
    return buffer.getvalue()


def unpack(data: bytes, target: Path) -> None:
    """Make `target` (which must not exist) hold exactly what `data` packed, all or nothing."""
    if target.exists():
        raise ArchiveError(f"{target} already exists; a rollout directory is never overwritten")
    staging = target.parent / f".{target.name}.incoming-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            archive.extractall(staging, filter="data")
        _fsync_tree(staging)
        os.rename(staging, target)
        fsync_dir(target.parent)
    except (tarfile.TarError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ArchiveError(f"the rollout directory for {target} cannot be unpacked: {exc}") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def sweep_incoming(rollouts: Path) -> None:
    """Remove staging directories a killed driver left (never a finished rollout directory)."""
    if rollouts.is_dir():
        for entry in rollouts.iterdir():
            if entry.name.startswith(".") and ".incoming-" in entry.name and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)


def _fsync_tree(root: Path) -> None:
    """Flush every file and directory below `root` before it is renamed into place."""
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            if not path.is_symlink():
                with path.open("rb") as handle:
                    os.fsync(handle.fileno())
        fsync_dir(Path(directory))
