"""A fresh virtual environment holding only the given workspace distributions, as pip installs them.

Through `uv pip install`: the same PEP 517 builds and dependency metadata
pip reads, served from the cache `uv sync` already filled, so an install
costs seconds instead of minutes of resolving and downloading Harbor's
dependencies again.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path


def lone_venv(venv: Path, distributions: Iterable[Path]) -> Path:
    """Make `venv` and install the distributions at these source directories; its python."""
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH (the tests run through `uv run pytest`)"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(python), *map(str, distributions)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return python
