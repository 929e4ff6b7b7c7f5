"""One writer per run directory: `eval`, `curriculum` and `transfer run` hold it while they work.

Two commands on the same run directory would run every attempt twice and
append both rows (pass@k and the Fisher tests would count them twice), so
the second is refused with one line naming the holder. The lock is an OS file
lock (released by the kernel when its process dies, SIGKILL included), and
beside it `writer.json` says who holds it: pid, host, command, since when.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from atoll.core.durable import atomic_write_json

LOCK_FILE = ".writer.lock"
HOLDER_FILE = "writer.json"
FILES = frozenset({LOCK_FILE, HOLDER_FILE})


class RunDirInUse(RuntimeError):
    """Another process writes this run directory now."""


@contextlib.contextmanager
def hold(run_dir: Path, command: str, flag: str = "--out") -> Iterator[None]:
    """Be the run directory's only writer for the block, or raise RunDirInUse naming the holder
    (`flag` is the option that names the directory, for the message)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(run_dir / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RunDirInUse(
            f"{run_dir} is in use by {holder(run_dir)}; wait for it to end or use another {flag}"
        ) from None
    try:
        atomic_write_json(
            run_dir / HOLDER_FILE,
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": command,
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
        yield
    finally:
        with contextlib.suppress(OSError):
            (run_dir / HOLDER_FILE).unlink()
        lock.release()


def holder(run_dir: Path) -> str:
    """Who holds the run directory, in words (from its `writer.json`)."""
    try:
        data = json.loads((run_dir / HOLDER_FILE).read_text("utf-8"))
        return f"`{data['command']}` (pid {data['pid']} on {data['host']}, since {data['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not said which yet)"


def is_empty(run_dir: Path) -> bool:
    """Whether the directory holds nothing but the writer's own files."""
    return not run_dir.exists() or all(p.name in FILES for p in run_dir.iterdir())
