"""atoll's cache directory, found one way by everything that keeps something there.

What atoll builds or fetches once per machine (Harbor's command names, the
sandbox launcher, FrontierCS tasks, the pinned Pi) lives under one
directory: `$ATOLL_CACHE_DIR`, else `$XDG_CACHE_HOME/atoll`, else
`~/.cache/atoll`. A blank variable counts as unset. Each user's own variable
(`ATOLL_SANDBOX_LAUNCHER_DIR`, `ATOLL_TASK_CACHE`, `ATOLL_PI_HOME`) still
names its own directory and wins over this one.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_dir"]

CACHE_ENV = "ATOLL_CACHE_DIR"


def cache_dir(*parts: str) -> Path:
    """atoll's cache directory, or `parts` below it (`cache_dir("sandbox")`); nothing is created."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).joinpath(*parts)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "atoll", *parts)
