"""Find a command the way a user of a virtual environment expects.

`.venv/bin/atoll stack up` runs without the venv activated, so its `bin/` is
not on PATH, yet the console scripts installed beside the interpreter (`reef`,
`harbor`) belong to the same install. Look on PATH first, then there.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def find_executable(name: str, path: str | None = None) -> str | None:
    """`name` on `path` (PATH when None), else beside the running interpreter, else None."""
    found = shutil.which(name, path=path)
    if found is not None:
        return found
    # Not resolved: a venv's python is a symlink to the base interpreter's.
    return shutil.which(name, path=str(Path(sys.executable).parent))
