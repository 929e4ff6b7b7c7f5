"""One writer per run directory: `eval`, `curriculum` and `transfer run` hold it while they work.

Two commands on the same run directory would run every attempt twice and
append both rows (pass@k and the Fisher tests would count them twice), so
the second is refused with one line naming the holder. The lock is
`atoll.core.run_lock`'s, on `.writer.lock`, with `writer.json` beside it
saying who holds it: pid, host, command, since when.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from atoll.core import run_lock

LOCK_FILE = ".writer.lock"
HOLDER_FILE = "writer.json"
FILES = frozenset({LOCK_FILE, HOLDER_FILE})

RunDirInUse = run_lock.RunDirInUse


@contextlib.contextmanager
def hold(run_dir: Path, command: str, flag: str = "--out") -> Iterator[None]:
    """Be the run directory's only writer for the block, or raise RunDirInUse naming the holder
    (`flag` is the option that names the directory, for the message)."""
    with run_lock.acquire(
        run_dir / LOCK_FILE,
        command=command,
        advice=f"wait for it to end or use another {flag}",
        record=run_dir / HOLDER_FILE,
    ):
        yield


def is_empty(run_dir: Path) -> bool:
    """Whether the directory holds nothing but the writer's own files."""
    return not run_dir.exists() or all(p.name in FILES for p in run_dir.iterdir())
