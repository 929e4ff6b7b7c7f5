"""The machine's mount table, read one way, and lazy unmounting below a directory.

The Docker engine's stop and its base-image build detach what they leave
mounted (dockerd's default network namespace, a failed debootstrap's /proc),
and the sandbox conformance audit looks for mounts a run left behind; all
three read the same table the same way.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_ESCAPE = re.compile(r"\\([0-7]{3})")


def mount_points() -> set[str]:
    """Where something is mounted in this process's mount namespace."""
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    # mountinfo writes space, tab, newline and backslash as octal escapes.
    return {_ESCAPE.sub(lambda m: chr(int(m[1], 8)), line.split()[4]) for line in lines}


def unmount_below(directory: Path) -> None:
    """Lazily unmount `directory` and everything mounted below it, deepest first."""
    top = str(directory.resolve())
    below = [m for m in mount_points() if m == top or m.startswith(top + "/")]
    for point in sorted(below, key=len, reverse=True):
        subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)
