"""A run's stdin bytes as a read-only, seekable file rather than a pipe.

Judges that copy a case's input into a file (the FrontierCS authority's
go-judge uses a memfd) let a program `fstat`, `mmap`, `lseek` or
`seekg`/`tellg` its stdin; on a pipe those fail (`tellg()` is -1), and such a
program scores 0 where the authority scores it. A memfd lives in memory only,
is charged to the supervisor rather than to the program's memory limit, and
its seals make it unwritable and unresizable even through `/proc/self/fd/0`.
A container engine cannot take a descriptor of ours, so the Docker backend
binds a read-only host file instead, which the container opens as its stdin.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Once these are set, nobody (the program included) can write, grow, shrink or unseal it.
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def sealed_memfd(data: bytes) -> int:
    """A descriptor of an anonymous in-memory file holding exactly `data`, sealed, at offset 0.

    The caller owns the descriptor (close-on-exec; hand it to a child as its
    stdin, which duplicates it) and closes it.
    """
    fd = os.memfd_create("stdin", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def stdin_file(data: bytes) -> Iterator[Path]:
    """A read-only host file holding exactly `data`, for a backend that binds it into the box.

    It lives in a private directory of its own, removed (file and all) on exit.
    """
    directory = Path(tempfile.mkdtemp(prefix="atoll-sandbox-stdin-"))
    try:
        path = directory / "stdin"
        path.write_bytes(data)
        path.chmod(0o444)  # the box's unprivileged uid reads it; nobody writes it
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)
