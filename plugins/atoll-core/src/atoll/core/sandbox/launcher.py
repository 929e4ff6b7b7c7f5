"""The session launcher (`launcher.c`), compiled once per machine and kept by its digest.

A bubblewrap session starts each run with this small C program rather than
a fresh bubblewrap (see `launcher.c` for what it does and why). It is built
with the machine's C compiler on first use, into a directory only this user
can write (it runs as root: a binary someone else could replace would run
their code as root), under a name holding the digest of its source and the
compiler, so that an edited source or a new compiler builds a new one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from functools import cache
from importlib import resources
from pathlib import Path

from atoll.core.sandbox.spec import SandboxError
from atoll.core.user_dirs import cache_dir

#: Where the launcher is built; default `sandbox/` in atoll's cache (`atoll.core.user_dirs`).
DIR_ENV = "ATOLL_SANDBOX_LAUNCHER_DIR"
COMPILERS = ("cc", "gcc", "clang")
FLAGS = ("-O2", "-Wall", "-Wextra")
# Linked statically where the C library allows: each run execs it, and a static binary
# starts (and forks) in a fraction of a dynamic one's time.
STATIC = "-static"
_guard = threading.Lock()


def source() -> bytes:
    return resources.files("atoll.core.sandbox").joinpath("launcher.c").read_bytes()


def build_dir() -> Path:
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    return cache_dir("sandbox")


@cache
def _compiler() -> tuple[str, str]:
    """(path, version line) of the first C compiler found."""
    for name in COMPILERS:
        path = shutil.which(name)
        if path is None:
            continue
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
        return path, (out.splitlines() or [path])[0].strip()
    raise SandboxError(
        "no C compiler to build the sandbox session launcher; install one (`apt-get install gcc`)"
    )


def launcher_path() -> Path:
    """The launcher binary, built now if this machine has none of this source yet."""
    compiler, version = _compiler()
    text = source()
    recipe = " ".join((*FLAGS, STATIC)).encode()
    digest = hashlib.sha256(text + b"\0" + version.encode() + b"\0" + recipe)
    directory = build_dir()
    target = directory / f"atoll-sandbox-launch-{digest.hexdigest()[:16]}"
    with _guard:
        _private_dir(directory)
        if not target.exists():
            _build(compiler, text, directory, target)
        _refuse_foreign(target)
    return target


def _private_dir(directory: Path) -> None:
    """Make `directory` (mode 0700 where new) and refuse it if others could write to it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise SandboxError(
            f"cannot make {directory} for the sandbox launcher: {exc.strerror}; "
            f"set {DIR_ENV} to a directory of your own"
        ) from None
    _refuse_foreign(directory)


def _refuse_foreign(path: Path) -> None:
    """SandboxError unless `path` is ours and nobody else may write to it."""
    info = path.lstat()
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SandboxError(
            f"{path} may be written by others, so the sandbox launcher (run as root) is not "
            f"built or run from it; remove it, or set {DIR_ENV} to a directory of your own"
        )


def _build(compiler: str, text: bytes, directory: Path, target: Path) -> None:
    """Compile into a private temporary directory beside `target`, then rename into place."""
    with tempfile.TemporaryDirectory(prefix=".build-", dir=directory) as work:
        src = Path(work) / "launcher.c"
        src.write_bytes(text)
        built = Path(work) / "launcher"
        for extra in ((STATIC,), ()):
            done = subprocess.run(
                [compiler, *FLAGS, *extra, "-o", str(built), str(src)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if done.returncode == 0:
                break
        else:
            raise SandboxError(
                f"cannot build the sandbox session launcher with {compiler}: "
                + done.stderr.strip()[-2000:]
            )
        built.chmod(0o700)
        os.rename(built, target)  # atomic: a concurrent build of the same source is the same
