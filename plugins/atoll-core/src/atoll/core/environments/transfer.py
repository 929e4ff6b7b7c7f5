"""Moving files in and out of a trial's box without trusting what is inside it.

The box's directories are writable by the code under test, which may plant
symlinks (`/app/out -> /etc/shadow`) or `..` names. So the host never walks
them: uploads are packed on the host (symlinks stored as links, never
followed) and unpacked by `tar` inside the box; downloads are packed by `tar`
inside the box and unpacked on the host with tarfile's `data` filter, which
refuses absolute paths, `..` and links that leave the destination.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path


def pack(source: Path, arcname: str) -> bytes:
    """A tar of `source` (file or directory) under `arcname`, links kept as links."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(os.fspath(source), arcname=arcname, recursive=True)
    return buffer.getvalue()


def unpack(data: bytes, target: Path) -> list[str]:
    """Extract a tar made inside the box into `target`; return the members left out.

    A member that would escape (absolute path, `..`, a link out of `target`,
    a device) is skipped rather than failing the whole download.
    """
    target.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []

    def only_safe(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            skipped.append(member.name)
            return None

    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        archive.extractall(target, filter=only_safe)
    return skipped
