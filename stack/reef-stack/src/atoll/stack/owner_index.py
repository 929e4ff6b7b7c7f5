"""Where on this machine job-owned Reefs may be: an index of the runs whose job started one.

A job's record that it owns the Reef it started lives in the run's own state
directory (`atoll.stack.orphans`), which is what the run's next job reads.
When nobody runs that run again, the Reef of a killed job must still be
findable, from any directory: so each record is also named here, one small
file per state directory, in atoll's state directory
(`atoll.core.user_dirs.state_dir`: `reef-stack/owned` under
`$ATOLL_STATE_DIR`, else `$XDG_STATE_HOME/atoll`, else `~/.local/state/atoll`). An
entry holds only the state directory's path; the record it points to is the
truth, and an entry whose record is gone is stale and skipped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from atoll.core.durable import atomic_write_bytes
from atoll.core.user_dirs import state_dir


def index_dir() -> Path:
    """`reef-stack/owned` in atoll's state directory (~/.local/state/atoll/reef-stack/owned)."""
    return state_dir("reef-stack", "owned")


def _entry(state_dir: Path) -> Path:
    key = hashlib.sha256(str(state_dir.absolute()).encode()).hexdigest()[:24]
    return index_dir() / f"{key}.json"


def add(state_dir: Path) -> None:
    """Name `state_dir` as a run whose job records a Reef it started."""
    data = json.dumps({"state_dir": str(state_dir.absolute())}).encode() + b"\n"
    atomic_write_bytes(_entry(state_dir), data, make_parents=True)


def remove(state_dir: Path) -> None:
    _entry(state_dir).unlink(missing_ok=True)


def state_dirs() -> list[Path]:
    """Every indexed state directory (unreadable entries are skipped)."""
    found = []
    for entry in sorted(index_dir().glob("*.json")):
        try:
            found.append(Path(json.loads(entry.read_text())["state_dir"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found
