"""atoll's per-user directories, each found one way by everything that keeps something there.

- The cache (`cache_dir`): what atoll builds or fetches once per machine and
  could build again (Harbor's command names, the sandbox launcher, FrontierCS
  tasks, the pinned Pi, the managed Tinker environment). `$ATOLL_CACHE_DIR`,
  else `$XDG_CACHE_HOME/atoll`, else `~/.cache/atoll`.
- The state (`state_dir`): what atoll remembers between commands and cannot
  build again (FrontierSmith's run index, the Reefs whose jobs were killed,
  the embedded judge's results). `$ATOLL_STATE_DIR`, else
  `$XDG_STATE_HOME/atoll`, else `~/.local/state/atoll`.
- The data (`data_dir`): what atoll keeps that is large and lasting (the
  private Docker engine's images). `$ATOLL_DATA_DIR`, else
  `$XDG_DATA_HOME/atoll`, else `~/.local/share/atoll`.

A blank variable counts as unset. Each user's own variable
(`ATOLL_SANDBOX_LAUNCHER_DIR`, `ATOLL_TASK_CACHE`, `ATOLL_PI_HOME`,
`ATOLL_JUDGE_STATE`, `ATOLL_DOCKER_STATE_DIR`) still names its own directory
and wins over these.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_ENV", "DATA_ENV", "STATE_ENV", "cache_dir", "data_dir", "state_dir"]

CACHE_ENV = "ATOLL_CACHE_DIR"
STATE_ENV = "ATOLL_STATE_DIR"
DATA_ENV = "ATOLL_DATA_DIR"


def cache_dir(*parts: str) -> Path:
    """atoll's cache directory, or `parts` below it (`cache_dir("sandbox")`); nothing is created."""
    return _user_dir(CACHE_ENV, "XDG_CACHE_HOME", (".cache",), parts)


def state_dir(*parts: str) -> Path:
    """atoll's state directory, or `parts` below it (`state_dir("judge")`); nothing is created."""
    return _user_dir(STATE_ENV, "XDG_STATE_HOME", (".local", "state"), parts)


def data_dir(*parts: str) -> Path:
    """atoll's data directory, or `parts` below it (`data_dir("docker")`); nothing is created."""
    return _user_dir(DATA_ENV, "XDG_DATA_HOME", (".local", "share"), parts)


def _user_dir(own: str, xdg: str, under_home: tuple[str, ...], parts: tuple[str, ...]) -> Path:
    """`$own`/parts, else `$xdg`/atoll/parts, else ~/under_home/atoll/parts (the XDG rules)."""
    explicit = os.environ.get(own)
    if explicit:
        return Path(explicit).joinpath(*parts)
    base = os.environ.get(xdg) or str(Path.home().joinpath(*under_home))
    return Path(base, "atoll", *parts)
