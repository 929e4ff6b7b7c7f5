"""What a judge killed without its own clean-up left behind, removed when a judge starts.

A judge killed with SIGKILL cannot remove its sandbox cgroups (and whatever
escaped into them), its socket directory or its private results directory.
Each is marked with its owner: the process's pid and start time (see
`atoll.core.sandbox.owners`). A judge that starts removes only what is
provably stale, that is whose owner no longer runs:

- the sandbox groups of the judges that used the same state directory
  (recorded under `<state>/sandbox-owners/`), never another state dir's;
- `atoll-judge-<owner>-*` socket and `atoll-judge-results-<owner>-*`
  directories in the temporary directory, if they hold nothing but what a
  judge puts there.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from pathlib import Path

from atoll.core import run_lock
from atoll.core.sandbox import cgroups, owners

log = logging.getLogger(__name__)

OWNERS_SUBDIR = "sandbox-owners"
SOCKET_PREFIX = "atoll-judge-"
RESULTS_PREFIX = "atoll-judge-results-"
_OWNED = re.compile(r"atoll-judge-(?:results-)?(?P<owner>[0-9]+\.[0-9]+)-[^/]+")
# What a judge leaves in each kind of directory; anything else means it is not ours to delete.
_SOCKET_FILES = frozenset({"judge.sock"})
_RESULTS_FILES = frozenset(
    {"judge.sqlite", "judge.sqlite-wal", "judge.sqlite-shm", "judge.sqlite-journal",
     "judge.sqlite.lock", "judge.sqlite.lock" + run_lock.HOLDER_SUFFIX}
)  # fmt: skip


def temp_dir(prefix: str) -> Path:
    """A fresh directory in the temporary directory, named after this process (its owner)."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owners.own_tag()}-"))


def claim_state_dir(state_dir: Path) -> list[Path]:
    """Reclaim the groups of dead judges of `state_dir`, then record this process as one.

    Returns the groups removed.
    """
    directory = state_dir / OWNERS_SUBDIR
    directory.mkdir(parents=True, exist_ok=True)
    removed: list[Path] = []
    for record in sorted(directory.iterdir()):
        if owners.parse(record.name) is None or owners.alive(record.name):
            continue
        try:
            groups = cgroups.reclaim(record.name)
        except OSError as exc:  # still busy: leave the record for the next start
            log.warning("cannot remove the sandbox groups of a stopped judge: %s", exc)
            continue
        if groups:
            log.info("removed %d sandbox groups a stopped judge left", len(groups))
        removed += groups
        record.unlink(missing_ok=True)
    (directory / owners.own_tag()).touch()
    return removed


def remove_stale_temp_dirs(root: Path | None = None) -> list[Path]:
    """Remove the socket and results directories of judges that no longer run."""
    root = root or Path(tempfile.gettempdir())
    removed = []
    for directory in sorted(root.glob(f"{SOCKET_PREFIX}*")):
        match = _OWNED.fullmatch(directory.name)
        if match is None or owners.alive(match["owner"]) or not _only_judge_files(directory):
            continue
        shutil.rmtree(directory, ignore_errors=True)
        if not directory.exists():
            removed.append(directory)
    return removed


def _only_judge_files(directory: Path) -> bool:
    expected = _RESULTS_FILES if directory.name.startswith(RESULTS_PREFIX) else _SOCKET_FILES
    try:
        if directory.is_symlink() or not directory.is_dir():
            return False
        entries = list(directory.iterdir())
    except OSError:
        return False
    return all(e.name in expected and not e.is_dir() for e in entries)
